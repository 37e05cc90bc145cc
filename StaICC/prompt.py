"""The prompt writer and the pseudo-query generators.

The template is one frozen value, :class:`Template`; writing a prompt is a pure
function of the template, the triplet split, the demonstration indexes, the query and
the label-noise stream (:func:`write_prompt`).  :class:`prompt_writter` (the
original's name, kept) holds the current template and the streams, and delegates.

Prompts are direct (``x label x label ... query label-prefix``) or noisy channel (one
prompt per candidate label, label before input).  Strings are assembled from a list
of pieces and joined once.
"""
from dataclasses import dataclass, fields, replace
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from .errors import warn, warn_tampering
from .rng import StableRandom, fresh_stream
from .standard import (LCG_INCREMENT, LCG_MULTIPLIER, NOISY_CHANNEL_LABEL_AFFIX, NOISY_CHANNEL_LAST_INPUT_AFFIX,
                       WRONG_LABEL_COUNT_WARNING)
from .validation import check_int, check_label_space, check_real, is_int

DemoLine = Tuple[Sequence[str], str]
#: a direct prompt is one string; a noisy-channel prompt is one string per label
Prompt = Union[str, List[str]]


# ----------------------------------------------------------------------------
# pseudo-query generators
# ----------------------------------------------------------------------------
class empty_query_generator:
    """Contextual bias: a query made of empty strings, one per input element, forever.

    The element count is that of the dataset's first row (the standard reads calibration
    row 0), looked up at first use so that building a benchmark reads no data.
    """

    def __init__(self, dataset) -> None:
        self.dataset = dataset

    def __iter__(self) -> Iterator[List[str]]:
        return self

    def __next__(self) -> List[str]:
        return [""] * self.dataset.input_element_numbers()

    def restart(self) -> None:
        """Nothing to restart: the generator has no state."""


class domain_query_generator:
    """Domain bias: queries of ``length`` words sampled from a dataset's texts.

    For each input element, ``length`` times: pick a row s = int_in_range(0, n - 1) (so the
    last row is never picked), split its text on single spaces (empty pieces kept), pick a
    piece w = int_in_range(0, pieces - 1) (never the last piece); the words are joined with
    one space.  The stream is created at first use; ``restart()`` starts it afresh so that
    every run of a benchmark sees the same queries (the original kept advancing it).
    """

    def __init__(self, dataset, length: int) -> None:
        if not is_int(length) or length < 0:
            raise ValueError(f"domain query length must be a non-negative int, got {length!r}")
        self.dataset = dataset
        self.length = length
        self._stream: Optional[StableRandom] = None
        self._pieces: Optional[List[List[List[str]]]] = None

    def __iter__(self) -> Iterator[List[str]]:
        return self

    def restart(self) -> None:
        """Start the stream afresh and drop the per-run word cache."""
        self._stream = None
        self._pieces = None

    def __next__(self) -> List[str]:
        rows = self.dataset.table
        if not len(rows):
            raise ValueError(f"domain bias samples its pseudo-query words from the demonstration texts, but the "
                             f"demonstration set {self.dataset.name!r} is empty: give it at least one row")
        if self._stream is None:
            self._stream = fresh_stream()
        if self._pieces is None:  # split every text once, not once per sampled word
            self._pieces = [[row[0][e].split(" ") for row in rows] for e in range(len(rows[0][0]))]
        # Inlined int_in_range(0, n - 1): with u = X / 2**32 and n < 2**21 the product is
        # exact, so int((n - 1) * u) == ((n - 1) * X) >> 32.
        state = self._stream.state
        a, b, last = LCG_MULTIPLIER, LCG_INCREMENT, len(rows) - 1
        query = []
        for pieces_of_row in self._pieces:
            words: List[str] = []
            append = words.append
            for _ in range(self.length):
                state = (a * state + b) & 0xFFFFFFFF
                pieces = pieces_of_row[(last * state) >> 32]
                state = (a * state + b) & 0xFFFFFFFF
                append(pieces[((len(pieces) - 1) * state) >> 32])
            query.append(" ".join(words))
        self._stream.state = state
        return query


# ----------------------------------------------------------------------------
# the template: one frozen value
# ----------------------------------------------------------------------------
def _is_str_tuple(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


@dataclass(frozen=True)
class Template:
    """Everything a prompt's text depends on besides the data and the streams.

    ``label_space`` holds the writer's label words, one per label of the dataset (they
    replace the dataset's label texts in prompts and are what the inference receives).
    ``label_wrong_rate`` is the share of demonstration labels flipped to the next label;
    ``cut_by_length`` characters are dropped from the end of every prompt (Python slice
    rules: ``prompt[:len(prompt) - cut_by_length]``).
    """

    instruction: str
    input_text_prefixes: Tuple[str, ...]
    input_text_affixes: Tuple[str, ...]
    label_prefix: str
    label_affix: str
    query_prefix: str
    label_space: Tuple[str, ...]
    label_wrong_rate: float = 0
    noisy_channel: bool = False
    cut_by_length: int = 0

    def __post_init__(self) -> None:
        for name in ("instruction", "label_prefix", "label_affix", "query_prefix"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Template.{name} must be a str, got {type(getattr(self, name)).__name__}")
        for name in ("input_text_prefixes", "input_text_affixes", "label_space"):
            if not _is_str_tuple(getattr(self, name)):
                raise TypeError(f"Template.{name} must be a tuple of str, got {getattr(self, name)!r}")
        if len(self.input_text_prefixes) != len(self.input_text_affixes):
            raise ValueError(f"Template needs one input text affix per prefix: {len(self.input_text_prefixes)} "
                             f"prefixes, {len(self.input_text_affixes)} affixes")
        check_label_space(self.label_space, at=" (Template.label_space)")
        check_real(self.label_wrong_rate, "the label wrong rate", minimum=0, maximum=1)
        if not isinstance(self.noisy_channel, bool):
            raise TypeError(f"Template.noisy_channel must be True or False, got {self.noisy_channel!r}")
        check_int(self.cut_by_length, "cut_by_length")

    @classmethod
    def from_dataset(cls, demonstration, test) -> "Template":
        """The standard template of a dataset: the demonstration part's, with the test part's query prefix."""
        values = demonstration.default_template()
        check_label_space(demonstration.label_space, at=f" (dataset {demonstration.name!r})")
        return cls(instruction=values["instruction"], input_text_prefixes=tuple(values["input_text_prefixes"]),
                   input_text_affixes=tuple(values["input_text_affixes"]), label_prefix=values["label_prefix"],
                   label_affix=values["label_affix"], query_prefix=test.default_template()["query_prefix"],
                   label_space=tuple(demonstration.label_space))

    def config_dict(self) -> dict:
        """The original's config dictionary: these 9 keys in this order, lists for sequences."""
        return {"instruction": self.instruction, "input_text_prefixes": list(self.input_text_prefixes),
                "input_text_affixes": list(self.input_text_affixes), "label_prefix": self.label_prefix,
                "label_affix": self.label_affix, "query_prefix": self.query_prefix,
                "label_space": list(self.label_space), "label_wrong_rate": self.label_wrong_rate,
                "use_noisy_channel": self.noisy_channel}


#: field names accepted by ``apply_template``: the Template's, plus the config-dict spelling of the flag
_TEMPLATE_FIELDS = frozenset(f.name for f in fields(Template))
_KEY_ALIASES = {"use_noisy_channel": "noisy_channel"}


@dataclass(frozen=True)
class WriterState:
    """What a run may change on a writer: its template and its list of departures from the standard."""

    template: Template
    tampered: Tuple[str, ...]


# ----------------------------------------------------------------------------
# writing: pure functions of (template, data, indexes, query, noise stream)
# ----------------------------------------------------------------------------
Line = Tuple[Sequence[str], str]  # (input texts, label word as written)


class CompiledTemplate:
    """A template bound to a triplet split: label words per raw label precomputed, once.

    Writing many prompts with one template (a run) compiles once; :func:`write_prompt`
    compiles per call.  The object is valid while the template and the demonstration
    part's label space, label mapping and rows are the ones it was built from
    (:meth:`matches`).
    """

    __slots__ = ("template", "triplet", "demonstration", "space", "mapping", "rows", "word", "wrong_word")

    def __init__(self, template: Template, triplet) -> None:
        demo = triplet.demonstration
        space, mapping = demo.label_space, demo.label_mapping
        words = template.label_space
        if len(words) != len(space):
            raise ValueError(f"the template has {len(words)} label words, the dataset {triplet.name!r} has "
                             f"{len(space)} labels: give one word per label")
        self.template, self.triplet, self.demonstration = template, triplet, demo
        self.space, self.mapping, self.rows = list(space), dict(mapping), demo.table.rows
        # A raw label is written as the word at the position of its text in the dataset's label
        # space (first match); a wrong label is the next label, cyclically.
        position = {raw: space.index(space[index]) for raw, index in mapping.items()}
        self.word = {raw: words[p] for raw, p in position.items()}
        self.wrong_word = {raw: words[space.index(space[(p + 1) % len(space)])] for raw, p in position.items()}

    def matches(self, template: Template, triplet) -> bool:
        """Whether this compilation still describes ``template`` on ``triplet`` (cheap: identity, small lists)."""
        demo = self.demonstration
        return (template is self.template and triplet is self.triplet and triplet.demonstration is demo
                and demo.table.rows is self.rows and demo.label_space == self.space and demo.label_mapping == self.mapping)

    def lines(self, demos_indexes: Sequence[int], noise_stream: Optional[StableRandom] = None) -> List[Line]:
        """(input texts, label word) of each demonstration, label noise applied.

        W = int(len(demos) * label_wrong_rate) demonstration index values are drawn, without
        repetition, from ``noise_stream`` (exactly W floats; none when W = 0); every
        demonstration whose index is among them (by value, so repeated indexes all flip)
        gets the next label, cyclically.  A non-integer W / len(demos) ratio warns.
        """
        count = len(demos_indexes)
        rate = self.template.label_wrong_rate
        wrong = int(count * rate)
        corrupted: Sequence[int] = ()
        if wrong:
            if wrong / count != rate:
                warn(WRONG_LABEL_COUNT_WARNING, stacklevel=4)
            if noise_stream is None:
                raise ValueError(f"label wrong rate {rate} needs a label-noise stream (dataset {self.triplet.name!r})")
            corrupted = noise_stream.n_elements(demos_indexes, wrong)
        rows, word, wrong_word = self.rows, self.word, self.wrong_word
        size = len(rows)
        lines = []
        for v in demos_indexes:
            if not 0 <= v < size:
                raise ValueError(f"Index out of range: demonstration index {v} not in [0, {size}) "
                                 f"(dataset {self.triplet.name!r})")
            inputs, raw = rows[v]
            lines.append((inputs, wrong_word[raw] if corrupted and v in corrupted else word[raw]))
        return lines

    def query_inputs(self, query_index: int) -> Sequence[str]:
        """The input texts of test item ``query_index``."""
        test = self.triplet.test.table.rows
        if not (type(query_index) is int or is_int(query_index)) or not 0 <= query_index < len(test):
            raise ValueError(f"Index out of range: query index {query_index!r} not in [0, {len(test)}) "
                             f"(dataset {self.triplet.name!r})")
        return test[query_index][0]

    def render(self, lines: Sequence[Line], query: Sequence[str]) -> Prompt:
        """The prompt text for (inputs, label word) demonstrations and the query's input texts.

        Direct: instruction, then per demonstration [prefix_e input_e affix_e]... label-prefix
        word label-affix, then query-prefix [prefix_e query_e affix_e]... label-prefix.
        Noisy channel, one prompt per label word l: instruction, then per demonstration
        label-prefix word label-affix [prefix_e input_e affix_e]..., then label-prefix l
        label-affix query-prefix [prefix_e query_e affix_e]... (nothing after the query).
        Every prompt then loses its last ``cut_by_length`` characters.
        """
        template = self.template
        pre, aff = template.input_text_prefixes, template.input_text_affixes
        lp, la = template.label_prefix, template.label_affix
        parts = [template.instruction]
        try:
            if not template.noisy_channel:
                for inputs, word in lines:
                    for e, text in enumerate(inputs):
                        parts += (pre[e], text, aff[e])
                    parts += (lp, word, la)
                parts.append(template.query_prefix)
                for e, text in enumerate(query):
                    parts += (pre[e], text, aff[e])
                parts.append(lp)
                return _cut("".join(parts), template.cut_by_length)
            for inputs, word in lines:
                parts += (lp, word, la)
                for e, text in enumerate(inputs):
                    parts += (pre[e], text, aff[e])
            tail = [template.query_prefix]
            for e, text in enumerate(query):
                tail += (pre[e], text, aff[e])
        except IndexError:
            raise ValueError(f"a row has more input texts than the template has input text prefixes "
                             f"({len(pre)}) (dataset {self.triplet.name!r})") from None
        head, end = "".join(parts), "".join(tail)
        return [_cut(head + lp + word + la + end, template.cut_by_length) for word in template.label_space]

    def write(self, demos_indexes: Sequence[int], query: Union[int, Sequence[str]],
              noise_stream: Optional[StableRandom] = None) -> Prompt:
        """One prompt; ``query`` is a test index or the query's input texts (a pseudo query)."""
        lines = self.lines(demos_indexes, noise_stream)
        return self.render(lines, query if isinstance(query, (list, tuple)) else self.query_inputs(query))


def write_prompt(template: Template, triplet, demos_indexes: Sequence[int], query: Union[int, Sequence[str]],
                 noise_stream: Optional[StableRandom] = None) -> Prompt:
    """The prompt for demonstration indexes and a query (a test index, or the query's input texts).

    Depends only on its arguments; ``noise_stream`` advances by W floats (see
    :meth:`CompiledTemplate.lines`), so writing from a fresh stream is reproducible.
    """
    return CompiledTemplate(template, triplet).write(demos_indexes, query, noise_stream)


def iter_prompts(template: Template, triplet, plan: Iterable[Tuple[Sequence[int], Union[int, Sequence[str]]]],
                 noise_stream: Optional[StableRandom] = None) -> Iterator[Prompt]:
    """The prompts of ``plan`` ((demonstration indexes, query) pairs), in order, lazily; one compilation."""
    compiled = CompiledTemplate(template, triplet)
    for demos_indexes, query in plan:
        yield compiled.write(demos_indexes, query, noise_stream)


def _cut(prompt: str, cut_by_length: int) -> str:
    """Drop the last ``cut_by_length`` characters (Python slice semantics, as the standard)."""
    return prompt[:len(prompt) - cut_by_length] if cut_by_length else prompt


# ----------------------------------------------------------------------------
# the writer
# ----------------------------------------------------------------------------
def _check_str(value, message: str) -> str:
    if not isinstance(value, str):
        raise ValueError(message)
    return value


def _check_str_list(value, list_message: str, item_message: str) -> Tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(list_message)
    if not all(isinstance(v, str) for v in value):
        raise ValueError(item_message)
    return tuple(value)


class prompt_writter:
    """Writes the prompts of one experimentor from its triplet split (the original's name kept).

    State: ``template`` (a frozen :class:`Template`), the list of departures from the
    standard, the label-noise and example streams, and an optional pseudo-query generator.
    Every mutator replaces ``template`` with a new value.
    """

    def __init__(self, triplet_dataset, use_noisy_channel: bool = False, pseudo_query_generater=None) -> None:
        self.triplet_dataset = triplet_dataset
        self.pseudo_query_generater = None
        self._compiled: Optional[CompiledTemplate] = None
        self.reset()
        if use_noisy_channel:
            self.use_noisy_channel()
        self.pseudo_query_generater = pseudo_query_generater

    # -- state ----------------------------------------------------------------
    def standard_template(self) -> Template:
        """The dataset's standard template (what ``reset()`` restores)."""
        return Template.from_dataset(self.triplet_dataset.demonstration, self.triplet_dataset.test)

    def reset(self) -> None:
        """Template from the dataset, fresh streams, noisy channel off, no label noise, no cut."""
        self.template = self.standard_template()
        self._tampered: List[str] = []
        self._label_error_stream = fresh_stream()
        self._example_stream = fresh_stream()

    def restart_streams(self) -> None:
        """Fresh label-noise stream and pseudo-query generator: the next run equals a first run."""
        self._label_error_stream = fresh_stream()
        generator = self.pseudo_query_generater
        if generator is not None and hasattr(generator, "restart"):
            generator.restart()

    def snapshot(self) -> WriterState:
        """Everything a run may change (template and departures), to restore it afterwards."""
        return WriterState(self.template, tuple(self._tampered))

    def restore(self, state: WriterState) -> None:
        if not isinstance(state, WriterState):
            raise TypeError(f"restore() takes what snapshot() returned, got {type(state).__name__}")
        self.template = state.template
        self._tampered = list(state.tampered)

    @property
    def cut_by_length(self) -> int:
        """Characters dropped from the end of every prompt (0: none)."""
        return self.template.cut_by_length

    @cut_by_length.setter
    def cut_by_length(self, value: int) -> None:
        self.template = replace(self.template, cut_by_length=check_int(value, "cut_by_length"))

    def get_label_space(self) -> List[str]:
        return list(self.template.label_space)

    def non_standard_settings(self) -> List[str]:
        """What was changed from the standard template since the last reset."""
        return list(self._tampered)

    def _set(self, cause: Optional[str], **changes) -> None:
        """Replace template fields; a cause records a departure from the standard."""
        self.template = replace(self.template, **changes)
        if cause is not None:
            self._tampered.append(cause)

    # -- mutators (each one is a departure from the standard) -----------------
    # Each warns first, then checks its argument (the original's messages), then stores.
    def change_instruction(self, new_instruction: str) -> None:
        warn_tampering("instruction changed")
        self._set("instruction changed",
                  instruction=_check_str(new_instruction, "Instruction should be a string."))

    def change_input_text_prefixes(self, new_prefixes: List[str]) -> None:
        warn_tampering("input text prefixes changed")
        prefixes = _check_str_list(new_prefixes, "Input text prefixes should be a list.",
                                   "Input text prefixes should be a list of strings.")
        self._check_element_count(prefixes, "input text prefixes")
        self._set("input text prefixes changed", input_text_prefixes=prefixes)

    def change_input_text_affixes(self, new_affixes: List[str]) -> None:
        warn_tampering("input text affixes changed")
        affixes = _check_str_list(new_affixes, "Input text affixes should be a list.",
                                  "Input text affixes should be a list of strings.")
        self._check_element_count(affixes, "input text affixes")
        self._set("input text affixes changed", input_text_affixes=affixes)

    def _check_element_count(self, values: Sequence[str], what: str) -> None:
        expected = self.triplet_dataset.demonstration.input_element_numbers()
        if len(values) != expected:
            raise ValueError(f"{what} need one entry per input element: got {len(values)}, the dataset "
                             f"{self.triplet_dataset.name!r} has {expected}")

    def change_label_prefix(self, new_prefix: str) -> None:
        warn_tampering("label prefix changed")
        self._set("label prefix changed", label_prefix=_check_str(new_prefix, "Label prefix should be a string."))

    def change_label_affix(self, new_affix: str) -> None:
        warn_tampering("label affix changed")
        self._set("label affix changed", label_affix=_check_str(new_affix, "Label affix should be a string."))

    def change_query_prefix(self, new_prefix: str) -> None:
        warn_tampering("query prefix changed")
        self._set("query prefix changed", query_prefix=_check_str(new_prefix, "Query prefix should be a string."))

    def change_label_space(self, new_label_space: List[str]) -> None:
        warn_tampering("label space changed")
        space = _check_str_list(new_label_space, "Label space should be a list.",
                                "Label space should be a list of strings.")
        self._set("label space changed", label_space=self._checked_label_space(space))

    def _checked_label_space(self, space: Sequence[str]) -> Tuple[str, ...]:
        """One distinct word per label of the dataset: a repeated word makes predictions ambiguous."""
        name = self.triplet_dataset.name
        expected = len(self.triplet_dataset.demonstration.label_space)
        if len(space) != expected:
            raise ValueError(f"the label space needs {expected} words (one per label of {name!r}), got {len(space)}")
        return tuple(check_label_space(space, at=f" (dataset {name!r})"))

    def set_label_wrong_rate(self, rate: float) -> None:
        warn_tampering(f"label wrong rate set to {rate!r}")
        self._set_label_wrong_rate(rate)
        self._tampered.append(f"label wrong rate set to {rate!r}")

    change_label_wrong_rate = set_label_wrong_rate  # the name the original README uses

    def _set_label_wrong_rate(self, rate: float) -> None:
        """Set the rate without recording a departure (GLER's passes are part of the standard)."""
        try:
            check_real(rate, "the label wrong rate", minimum=0, maximum=1)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"The label wrong rate should be in [0, 1]: {exc}") from None
        self._set(None, label_wrong_rate=rate)

    def use_noisy_channel(self, new_label_affix: str = NOISY_CHANNEL_LABEL_AFFIX,
                          new_last_input_affix: str = NOISY_CHANNEL_LAST_INPUT_AFFIX) -> None:
        """Noisy channel on, with these label affix and last input affix; nothing if already on."""
        template = self.template
        if template.noisy_channel:
            return
        label_affix = _check_str(new_label_affix, "Label affix should be a string.")
        last = _check_str(new_last_input_affix, f"The last input affix should be a string, got {new_last_input_affix!r}.")
        self._set(None, noisy_channel=True, label_affix=label_affix,
                  input_text_affixes=template.input_text_affixes[:-1] + (last,))

    def cancel_noisy_channel(self) -> None:
        """Noisy channel off; label affix and last input affix back to the dataset's defaults."""
        template = self.template
        if not template.noisy_channel:
            return
        defaults = self.standard_template()
        self._set(None, noisy_channel=False, label_affix=defaults.label_affix,
                  input_text_affixes=template.input_text_affixes[:-1] + defaults.input_text_affixes[-1:])

    disable_noisy_channel = cancel_noisy_channel  # the name the original README uses

    def replace_space_to_label(self) -> None:
        """Reset, then move the label prefix's last character (a space) to the head of every label word."""
        self.reset()
        new_space = [" " + label for label in self.template.label_space]
        self.change_label_prefix(self.template.label_prefix[:-1])
        self.change_label_space(new_space)

    # -- config dictionary ----------------------------------------------------
    _CONFIG_ORDER = ("instruction", "input_text_prefixes", "input_text_affixes", "label_prefix",
                     "label_affix", "query_prefix", "label_space", "label_wrong_rate", "use_noisy_channel")

    def get_config_dict(self) -> dict:
        """The template as the original's dict: the 9 keys of ``_CONFIG_ORDER``, values copied."""
        return self.template.config_dict()

    def set_config_dict(self, config_dict: dict) -> None:
        """Reset, then apply the given keys in ``_CONFIG_ORDER`` through the mutators (unknown keys ignored).

        A truthy ``use_noisy_channel`` turns the noisy channel on keeping the dict's own label
        affix and last input affix (the original overwrote them), so
        ``set_config_dict(get_config_dict())`` is a round trip.
        """
        if not isinstance(config_dict, dict):
            raise TypeError(f"set_config_dict expects a dict (as get_config_dict returns), got "
                            f"{type(config_dict).__name__}")
        self.reset()
        setters = {
            "instruction": self.change_instruction,
            "input_text_prefixes": self.change_input_text_prefixes,
            "input_text_affixes": self.change_input_text_affixes,
            "label_prefix": self.change_label_prefix,
            "label_affix": self.change_label_affix,
            "query_prefix": self.change_query_prefix,
            "label_space": self.change_label_space,
            "label_wrong_rate": self.set_label_wrong_rate,
        }
        for key in self._CONFIG_ORDER[:-1]:
            if key in config_dict:
                setters[key](config_dict[key])
        if config_dict.get("use_noisy_channel"):
            template = self.template
            self.use_noisy_channel(template.label_affix if "label_affix" in config_dict else NOISY_CHANNEL_LABEL_AFFIX,
                                   template.input_text_affixes[-1] if "input_text_affixes" in config_dict
                                   else NOISY_CHANNEL_LAST_INPUT_AFFIX)

    def apply_template(self, template: Dict[str, object]) -> None:
        """Reset, then set template fields without warnings (Template_sens's passes are standard).

        Keys are :class:`Template` field names (or ``use_noisy_channel``); lists become tuples.
        """
        self.reset()
        changes = {}
        for key, value in template.items():
            name = _KEY_ALIASES.get(key, key)
            if name not in _TEMPLATE_FIELDS:
                raise KeyError(f"unknown template key {key!r}; expected one of {sorted(_TEMPLATE_FIELDS)}")
            changes[name] = tuple(value) if isinstance(value, list) else value
        if "label_space" in changes:
            changes["label_space"] = self._checked_label_space(changes["label_space"])
        self._set(None, **changes)

    # -- writing ----------------------------------------------------------------
    def compiled(self) -> CompiledTemplate:
        """The current template bound to this writer's data (rebuilt only when either changed)."""
        compiled = self._compiled
        if compiled is None or not compiled.matches(self.template, self.triplet_dataset):
            compiled = self._compiled = CompiledTemplate(self.template, self.triplet_dataset)
        return compiled

    def write_prompt_from_dataline(self, demos_lines: Sequence[DemoLine], query_line: Sequence[str],
                                   cut_by_length: int = 0) -> Prompt:
        """The prompt for explicit (inputs, label text) demonstrations and query inputs.

        Label texts are those of the dataset; each is written as the writer's word at its
        position in the dataset's label space.  No label noise; ``cut_by_length`` given here
        (not the writer's) applies.
        """
        compiled = self.compiled()
        if cut_by_length != compiled.template.cut_by_length:
            template = replace(compiled.template, cut_by_length=check_int(cut_by_length, "cut_by_length"))
            compiled = CompiledTemplate(template, self.triplet_dataset)
        space, words = compiled.space, compiled.template.label_space
        lines = []
        for number, (inputs, label) in enumerate(demos_lines):
            try:
                lines.append((inputs, words[space.index(label)]))
            except ValueError:
                raise ValueError(f"demonstration {number} has label {label!r}, which is not in the label space "
                                 f"{space} of dataset {self.triplet_dataset.name!r}") from None
        return compiled.render(lines, query_line)

    def write_prompt(self, demos_indexes: Sequence[int], query_index: Optional[int] = None) -> Prompt:
        """The prompt for demonstration indexes and a test index (or the next pseudo query), with label noise."""
        generator = self.pseudo_query_generater
        if query_index is None and generator is None:
            raise ValueError("The query index should be given. If you want to use the pseudo query, "
                             "please set the pseudo query generater.")
        compiled = self.compiled()
        lines = compiled.lines(demos_indexes, self._label_error_stream)
        query = next(generator) if generator is not None else compiled.query_inputs(query_index)
        return compiled.render(lines, query)

    def example(self, k: int = 8) -> Prompt:
        """A sample prompt: k random demonstrations and a random query from the example stream."""
        demo_count = len(self.triplet_dataset.demonstration)
        if not is_int(k) or k < 0 or k > demo_count:
            raise ValueError(f"Invalid number of demonstrations: k = {k!r}, expected 0 <= k <= {demo_count}")
        indexes = self._example_stream.index_set(k, demo_count)
        query = self._example_stream.int_in_range(0, len(self.triplet_dataset.test))
        return self.write_prompt(indexes, query)
