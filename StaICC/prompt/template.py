"""The template (one frozen value) and the pure prompt-writing functions.

:class:`Template` is everything a prompt's text depends on besides the data and the
streams; :class:`CompiledTemplate` binds it to a triplet split once per run;
:func:`write_prompt` and :func:`iter_prompts` are pure functions of (template, data,
indexes, query, noise stream).  They are kept apart from the stateful
:class:`~StaICC.prompt.writer.prompt_writter` so they can be read and tested alone.

Prompts are direct (``x label x label ... query label-prefix``) or noisy channel (one
prompt per candidate label, label before input).  Strings are assembled from a list
of pieces and joined once.
"""
from dataclasses import dataclass, fields, replace
from itertools import repeat
from operator import itemgetter
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ..errors import warn
from ..rng import StableRandom
from ..standard import WRONG_LABEL_COUNT_WARNING
from ..validation import check_bool, check_int, check_label_space, check_real, is_int
from .pieces import DemonstrationTexts, QueryTexts, query_writer, table
from ..errors import InvalidTypeError, InvalidValueError

DemoLine = Tuple[Sequence[str], str]
#: a direct prompt's text in its parts: (instruction, then per demonstration its input part
#: (input texts and label prefix) and its label part (label word and label affix), then the
#: query part (query prefix, input texts, label prefix)); they concatenate to the prompt exactly
Segments = Tuple[str, ...]
#: a direct prompt is one string; a noisy-channel prompt is one string per label
Prompt = Union[str, List[str]]


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
                raise InvalidTypeError(f"Template.{name} must be a str, got {type(getattr(self, name)).__name__}")
        for name in ("input_text_prefixes", "input_text_affixes", "label_space"):
            if not _is_str_tuple(getattr(self, name)):
                raise InvalidTypeError(f"Template.{name} must be a tuple of str, got {getattr(self, name)!r}")
        if len(self.input_text_prefixes) != len(self.input_text_affixes):
            raise InvalidValueError(f"Template needs one input text affix per prefix: {len(self.input_text_prefixes)} "
                                    f"prefixes, {len(self.input_text_affixes)} affixes")
        check_label_space(self.label_space, at=" (Template.label_space)")
        check_real(self.label_wrong_rate, "the label wrong rate", minimum=0, maximum=1)
        check_bool(self.noisy_channel, "Template.noisy_channel")
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
        if len(words) < len(space):  # words beyond the labels are distractors no item has (as in the original)
            raise InvalidValueError(f"the template has {len(words)} label words, the dataset {triplet.name!r} has "
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
        corrupted = self.corrupted(demos_indexes, noise_stream)
        rows, word, wrong_word = self.rows, self.word, self.wrong_word
        lines = []
        for v in demos_indexes:
            inputs, raw = rows[self._checked(v)]
            lines.append((inputs, wrong_word[raw] if corrupted and v in corrupted else word[raw]))
        return lines

    def corrupted(self, demos_indexes: Sequence[int], noise_stream: Optional[StableRandom]) -> Sequence[int]:
        """The demonstration index values whose label is flipped (the W draws of :meth:`lines`)."""
        return self.corrupted_each((demos_indexes,), noise_stream, stacklevel=6)[0]

    def corrupted_each(self, demos_lists: Sequence[Sequence[int]], noise_stream: Optional[StableRandom],
                       stacklevel: int = 5, warn_uneven: bool = True) -> List[Sequence[int]]:
        """:meth:`corrupted` of each list in order, the stream drawn on from one list to the next.

        ``warn_uneven=False``: no warning (the flips are computed, no prompt is written)."""
        rate = self.template.label_wrong_rate
        sizes = list(map(len, demos_lists))
        wrong_of = {size: int(size * rate) for size in set(sizes)}  # W per list length
        counts = list(map(wrong_of.__getitem__, sizes))
        uneven = {size for size, wrong in wrong_of.items() if wrong and wrong / size != rate} if warn_uneven else ()
        for size in sizes if uneven else ():
            if size in uneven:  # one warning per prompt, as each prompt is written
                warn(WRONG_LABEL_COUNT_WARNING, stacklevel=stacklevel)
        if not any(counts):
            return [()] * len(counts)
        if noise_stream is None:
            raise InvalidValueError(f"label wrong rate {rate} needs a label-noise stream (dataset {self.triplet.name!r})")
        if counts == sizes:  # W = len everywhere: every position is drawn, so every index value flips
            noise_stream.skip(sum(counts))  # whatever the floats; the stream still gives W per prompt
            return list(demos_lists)
        return noise_stream.n_elements_each(demos_lists, counts)

    def _checked(self, v: int) -> int:
        if not 0 <= v < len(self.rows):
            raise InvalidValueError(f"Index out of range: demonstration index {v} not in [0, {len(self.rows)}) "
                             f"(dataset {self.triplet.name!r})")
        return v

    def write_many(self, queries: Iterable[Tuple[Sequence[int], Union[int, Sequence[str]]]],
                   noise_stream: Optional[StableRandom], pieces: dict,
                   segments: Optional[List[Optional[Segments]]] = None,
                   only: Optional[Sequence[int]] = None) -> List[Prompt]:
        """:meth:`write` for each (demonstration indexes, query) in order, reusing rendered text from ``pieces``.

        ``pieces`` keeps, under ``"demonstrations"``, each demonstration's text (with its
        label and with the next label) and, under ``"queries"``, each test query's text, so
        a run renders each once however many prompts and passes use it (GLER's five passes,
        Demo_sens's eight repeats).  Both are made when absent; a caller may share the first
        between writes with the same template (label-noise rate aside) and demonstration
        rows, the second between writes with the same template and test rows.  Equal to :meth:`write`.

        ``segments``: a list that receives, per prompt, its :data:`Segments` (None for a
        noisy-channel prompt); only a backend that reads demonstration boundaries asks.
        ``only``: the positions in ``queries`` to write, ascending (the noise stream still
        advances over every query, so each written prompt equals its prompt in the full list).
        """
        template = self.template
        queries = queries if isinstance(queries, list) else list(queries)
        if template.noisy_channel:
            chosen = set(range(len(queries)) if only is None else only)
            prompts = [self.write(demos, query, noise_stream) if i in chosen else self.corrupted(demos, noise_stream)
                       for i, (demos, query) in enumerate(queries)]
            prompts = [p for i, p in enumerate(prompts) if i in chosen] if only is not None else prompts
            if segments is not None:
                segments.extend([None] * len(prompts))
            return prompts
        store = pieces.setdefault("demonstrations", {})
        # a demonstration's text depends on its label's word: one table per word mapping
        right = table(store, tuple(self.word.items()), lambda: DemonstrationTexts(self, self.word))
        wrong = table(store, tuple(self.wrong_word.items()), lambda: DemonstrationTexts(self, self.wrong_word))
        asked = table(pieces.setdefault("queries", {}), None, lambda: QueryTexts(self))
        pseudo = query_writer(self)
        instruction, cut = template.instruction, template.cut_by_length
        flips = self.corrupted_each(list(map(itemgetter(0), queries)), noise_stream) \
            if template.label_wrong_rate > 0 else repeat((), len(queries))
        if only is not None:
            flips = list(flips)
            queries, flips = [queries[i] for i in only], [flips[i] for i in only]
        # bound look-ups: a subscript on a dict subclass dispatches through __getitem__ by name, a bound one does not
        labelled, mislabelled, test_text = right.__getitem__, wrong.__getitem__, asked.__getitem__
        prompts: List[Prompt] = []
        for (demos, query), flipped in zip(queries, flips):
            if not flipped:
                texts = map(labelled, demos)
            elif len(flipped) == len(demos):  # every position drawn: every demonstration flips
                texts = map(mislabelled, demos)
            else:
                texts = [mislabelled(v) if v in flipped else labelled(v) for v in demos]
            parts = [instruction, *texts, pseudo(query) if isinstance(query, (list, tuple)) else test_text(query)]
            if segments is not None:
                segments.append(cut_segments(self._segments(demos, flipped, parts), cut))
            prompt = "".join(parts)
            prompts.append(prompt[:len(prompt) - cut] if cut else prompt)
        return prompts

    def _segments(self, demos: Sequence[int], flipped: Sequence[int], parts: List[str]) -> Segments:
        """A direct prompt's ``parts`` (instruction, demonstrations, query part) with each demonstration
        split before its label word."""
        segments = [parts[0]]
        affix = len(self.template.label_affix)
        for v, text in zip(demos, parts[1:-1]):
            label = (self.wrong_word if v in flipped else self.word)[self.rows[v][1]]
            split = len(text) - len(label) - affix
            segments += (text[:split], text[split:])
        segments.append(parts[-1])
        return tuple(segments)

    def _inputs_text(self, inputs: Sequence[str]) -> str:
        """[prefix_e input_e affix_e]... of one demonstration or query (direct prompts)."""
        pre, aff = self.template.input_text_prefixes, self.template.input_text_affixes
        try:
            return "".join([pre[e] + text + aff[e] for e, text in enumerate(inputs)])
        except IndexError:
            raise InvalidValueError(f"a row has more input texts than the template has input text prefixes "
                                    f"({len(pre)}) (dataset {self.triplet.name!r})") from None

    def query_inputs(self, query_index: int) -> Sequence[str]:
        """The input texts of test item ``query_index``."""
        test = self.triplet.test.table.rows
        if not (type(query_index) is int or is_int(query_index)) or not 0 <= query_index < len(test):
            raise InvalidValueError(f"Index out of range: query index {query_index!r} not in [0, {len(test)}) "
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
            raise InvalidValueError(f"a row has more input texts than the template has input text prefixes "
                                    f"({len(pre)}) (dataset {self.triplet.name!r})") from None
        head, end = "".join(parts), "".join(tail)
        return [_cut(head + lp + word + la + end, template.cut_by_length) for word in template.label_space]

    def write_from_datalines(self, demos_lines: Sequence[DemoLine], query_line: Sequence[str]) -> Prompt:
        """The prompt for explicit (inputs, label text) demonstrations and query inputs, without label noise.

        Label texts are those of the dataset; each is written as the template's word at its
        position in the dataset's label space (how calibrations write their training prompts).
        """
        space, words = self.space, self.template.label_space
        lines = []
        for number, (inputs, label) in enumerate(demos_lines):
            try:
                lines.append((inputs, words[space.index(label)]))
            except ValueError:
                raise InvalidValueError(f"demonstration {number} has label {label!r}, which is not in the label space "
                                        f"{space} of dataset {self.triplet.name!r}") from None
        return self.render(lines, query_line)

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


def dataline_writer(template: Template, triplet, cut_by_length: int = 0) -> Callable[..., Prompt]:
    """``write(demos_lines, query_line)``: :meth:`CompiledTemplate.write_from_datalines` of ``template`` on
    ``triplet`` with ``cut_by_length`` (the writer's ``write_prompt_from_dataline`` cuts nothing by default)."""
    if cut_by_length != template.cut_by_length:
        template = replace(template, cut_by_length=check_int(cut_by_length, "cut_by_length"))
    return CompiledTemplate(template, triplet).write_from_datalines


def iter_prompts(template: Template, triplet, plan: Iterable[Tuple[Sequence[int], Union[int, Sequence[str]]]],
                 noise_stream: Optional[StableRandom] = None) -> Iterator[Prompt]:
    """The prompts of ``plan`` ((demonstration indexes, query) pairs), in order, lazily; one compilation."""
    compiled = CompiledTemplate(template, triplet)
    for demos_indexes, query in plan:
        yield compiled.write(demos_indexes, query, noise_stream)


def cut_segments(parts: Segments, cut_by_length: int) -> Segments:
    """``parts`` cut as :func:`_cut` cuts their concatenation (Python slice semantics), so they
    still concatenate to the prompt; emptied parts stay, as empty strings, so positions keep their meaning."""
    if not cut_by_length:
        return parts
    keep = len(_cut("".join(parts), cut_by_length))
    out = []
    for part in parts:
        out.append(part[:max(keep, 0)])
        keep -= len(part)
    return tuple(out)


def _cut(prompt: str, cut_by_length: int) -> str:
    """Drop the last ``cut_by_length`` characters (Python slice semantics, as the standard)."""
    return prompt[:len(prompt) - cut_by_length] if cut_by_length else prompt
