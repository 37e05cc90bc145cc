"""The prompt writer (spec §5) and the pseudo-query generators (spec §8.3, §8.4).

The writer turns demonstration indexes and a query index into the exact prompt
string of the standard: direct (``x label x label ... query label-prefix``) or noisy
channel (one prompt per candidate label, label before input), with optional label
noise drawn from its own stream.  Strings are assembled from a list of pieces and
joined once.
"""
import numbers
from typing import Iterator, List, Optional, Sequence, Tuple

from .datasets import template_of
from .errors import warn, warn_tampering
from .rng import StableRandom, fresh_stream
from .standard import (LCG_INCREMENT, LCG_MULTIPLIER, NOISY_CHANNEL_LABEL_AFFIX, NOISY_CHANNEL_LAST_INPUT_AFFIX, WRONG_LABEL_COUNT_WARNING)

DemoLine = Tuple[Sequence[str], str]


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
    """Domain bias: queries of ``length`` words sampled from a dataset's texts (spec §8.4).

    The stream is created at first use; ``restart()`` starts it afresh so that every
    run of a benchmark sees the same queries (the original kept advancing it).
    """

    def __init__(self, dataset, length: int) -> None:
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
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
        if self._stream is None:
            self._stream = fresh_stream()
        rows = self.dataset.table
        if self._pieces is None:  # split every text once, not once per sampled word
            self._pieces = [[row[0][e].split(" ") for row in rows] for e in range(len(rows[0][0]))]
        # Inlined int_in_range(0, n - 1): with u = X / 2**32 and n < 2**21 the product is
        # exact, so int((n - 1) * u) == ((n - 1) * X) >> 32 (spec §1.3).
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
# the writer
# ----------------------------------------------------------------------------
def _check_str(value, message: str) -> str:
    if not isinstance(value, str):
        raise ValueError(message)
    return value


def _check_str_list(value, list_message: str, item_message: str) -> List[str]:
    if not isinstance(value, list):
        raise ValueError(list_message)
    if not all(isinstance(v, str) for v in value):
        raise ValueError(item_message)
    return list(value)


class prompt_writter:
    """Writes the prompts of one experimentor from its triplet split (the original's name kept)."""

    def __init__(self, triplet_dataset, use_noisy_channel: bool = False, pseudo_query_generater=None) -> None:
        self.triplet_dataset = triplet_dataset
        self.reset()
        if use_noisy_channel:
            self.use_noisy_channel()
        self.pseudo_query_generater = pseudo_query_generater

    # -- state ----------------------------------------------------------------
    def reset(self) -> None:
        """Template from the dataset, fresh streams, noisy channel off, no label noise."""
        demo = self.triplet_dataset.demonstration
        template = demo.default_template()
        self._instruction = template["instruction"]
        self._input_text_prefixes = template["input_text_prefixes"]
        self._input_text_affixes = template["input_text_affixes"]
        self._label_prefix = template["label_prefix"]
        self._label_affix = template["label_affix"]
        self._query_prefix = self.triplet_dataset.test.default_template()["query_prefix"]
        self._label_space = demo.get_label_space()
        self._use_noisy_channel = False
        self._label_wrong_rate = 0
        self._tampered: List[str] = []
        self.cut_by_length = 0
        self._label_error_stream = fresh_stream()
        self._example_stream = fresh_stream()

    def restart_streams(self) -> None:
        """Fresh label-noise stream and pseudo-query generator: the next run equals a first run."""
        self._label_error_stream = fresh_stream()
        generator = getattr(self, "pseudo_query_generater", None)
        if generator is not None and hasattr(generator, "restart"):
            generator.restart()

    def snapshot(self) -> dict:
        """Everything a run may change, to restore it afterwards."""
        return {key: (list(value) if isinstance(value, list) else value)
                for key, value in vars(self).items() if key.startswith("_") and not key.endswith("stream")}

    def restore(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self, key, list(value) if isinstance(value, list) else value)

    def get_label_space(self) -> List[str]:
        return list(self._label_space)

    def non_standard_settings(self) -> List[str]:
        """What was changed from the standard template since the last reset."""
        return list(self._tampered)

    def _tamper(self, cause: str) -> None:
        warn_tampering(cause, stacklevel=4)
        self._tampered.append(cause)

    # -- mutators (each one is a departure from the standard) -----------------
    def change_instruction(self, new_instruction: str) -> None:
        self._tamper("instruction changed")
        self._instruction = _check_str(new_instruction, "Instruction should be a string.")

    def change_input_text_prefixes(self, new_prefixes: List[str]) -> None:
        self._tamper("input text prefixes changed")
        prefixes = _check_str_list(new_prefixes, "Input text prefixes should be a list.",
                                   "Input text prefixes should be a list of strings.")
        self._check_element_count(prefixes, "input text prefixes")
        self._input_text_prefixes = prefixes

    def change_input_text_affixes(self, new_affixes: List[str]) -> None:
        self._tamper("input text affixes changed")
        affixes = _check_str_list(new_affixes, "Input text affixes should be a list.",
                                  "Input text affixes should be a list of strings.")
        self._check_element_count(affixes, "input text affixes")
        self._input_text_affixes = affixes

    def _check_element_count(self, values: List[str], what: str) -> None:
        expected = self.triplet_dataset.demonstration.input_element_numbers()
        if len(values) != expected:
            raise ValueError(f"{what} need one entry per input element: got {len(values)}, the dataset "
                             f"{self.triplet_dataset.name!r} has {expected}")

    def change_label_prefix(self, new_prefix: str) -> None:
        self._tamper("label prefix changed")
        self._label_prefix = _check_str(new_prefix, "Label prefix should be a string.")

    def change_label_affix(self, new_affix: str) -> None:
        self._tamper("label affix changed")
        self._label_affix = _check_str(new_affix, "Label affix should be a string.")

    def change_query_prefix(self, new_prefix: str) -> None:
        self._tamper("query prefix changed")
        self._query_prefix = _check_str(new_prefix, "Query prefix should be a string.")

    def change_label_space(self, new_label_space: List[str]) -> None:
        self._tamper("label space changed")
        space = _check_str_list(new_label_space, "Label space should be a list.",
                                "Label space should be a list of strings.")
        expected = len(self.triplet_dataset.demonstration.label_space)
        if len(space) != expected:
            raise ValueError(f"the label space needs {expected} words (one per label of "
                             f"{self.triplet_dataset.name!r}), got {len(space)}")
        self._label_space = space

    def set_label_wrong_rate(self, rate: float) -> None:
        self._tamper(f"label wrong rate set to {rate!r}")
        self._set_label_wrong_rate(rate)

    change_label_wrong_rate = set_label_wrong_rate  # the name the original README uses

    def _set_label_wrong_rate(self, rate: float) -> None:
        if not isinstance(rate, numbers.Real) or isinstance(rate, bool) or not 0 <= rate <= 1:
            raise ValueError(f"The label wrong rate should be in [0, 1]: got {rate!r}")
        self._label_wrong_rate = rate

    def use_noisy_channel(self, new_label_affix: str = NOISY_CHANNEL_LABEL_AFFIX,
                          new_last_input_affix: str = NOISY_CHANNEL_LAST_INPUT_AFFIX) -> None:
        if self._use_noisy_channel:
            return
        self._use_noisy_channel = True
        self._label_affix = new_label_affix
        self._input_text_affixes = self._input_text_affixes[:-1] + [new_last_input_affix]

    def cancel_noisy_channel(self) -> None:
        """Noisy channel off; label affix and last input affix back to the dataset's defaults."""
        if not self._use_noisy_channel:
            return
        self._use_noisy_channel = False
        defaults = self.triplet_dataset.demonstration.default_template()
        self._label_affix = defaults["label_affix"]
        self._input_text_affixes = self._input_text_affixes[:-1] + defaults["input_text_affixes"][-1:]

    disable_noisy_channel = cancel_noisy_channel  # the name the original README uses

    def replace_space_to_label(self) -> None:
        """Move the label prefix's trailing space to the head of every label word (spec §5.5)."""
        self.reset()
        new_space = [" " + label for label in self._label_space]
        self.change_label_prefix(self._label_prefix[:-1])
        self.change_label_space(new_space)

    # -- config dictionary (spec §5.7) ----------------------------------------
    _CONFIG_ORDER = ("instruction", "input_text_prefixes", "input_text_affixes", "label_prefix",
                     "label_affix", "query_prefix", "label_space", "label_wrong_rate", "use_noisy_channel")

    def get_config_dict(self) -> dict:
        config = template_of(self)
        config.update(label_space=list(self._label_space), label_wrong_rate=self._label_wrong_rate,
                      use_noisy_channel=self._use_noisy_channel)
        return config

    def set_config_dict(self, config_dict: dict) -> None:
        """Reset, then apply the given keys in the standard order (unknown keys ignored).

        Unlike the original, ``use_noisy_channel`` keeps the dict's own label affix and
        last input affix, so ``set_config_dict(get_config_dict())`` is a round trip.
        """
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
            self.use_noisy_channel(self._label_affix if "label_affix" in config_dict else NOISY_CHANNEL_LABEL_AFFIX,
                                   self._input_text_affixes[-1] if "input_text_affixes" in config_dict
                                   else NOISY_CHANNEL_LAST_INPUT_AFFIX)

    def apply_template(self, template: dict) -> None:
        """Reset, then set template keys without warnings (used by Template_sens)."""
        self.reset()
        for key, value in template.items():
            attribute = "_" + key
            if not hasattr(self, attribute):
                raise KeyError(f"unknown template key {key!r}")
            setattr(self, attribute, list(value) if isinstance(value, list) else value)

    # -- writing ----------------------------------------------------------------
    def write_prompt_from_dataline(self, demos_lines: Sequence[DemoLine], query_line: Sequence[str],
                                   cut_by_length: int = 0):
        """The prompt for explicit (inputs, label text) demonstrations and query inputs."""
        demo_space = self.triplet_dataset.demonstration.label_space
        words = [self._label_space[demo_space.index(label)] for _inputs, label in demos_lines]
        pre, aff = self._input_text_prefixes, self._input_text_affixes
        lp, la = self._label_prefix, self._label_affix
        parts = [self._instruction]
        if not self._use_noisy_channel:
            for (inputs, _label), word in zip(demos_lines, words):
                for e, text in enumerate(inputs):
                    parts += (pre[e], text, aff[e])
                parts += (lp, word, la)
            parts.append(self._query_prefix)
            for e, text in enumerate(query_line):
                parts += (pre[e], text, aff[e])
            parts.append(lp)
            return _cut("".join(parts), cut_by_length)
        for (inputs, _label), word in zip(demos_lines, words):
            parts += (lp, word, la)
            for e, text in enumerate(inputs):
                parts += (pre[e], text, aff[e])
        head = "".join(parts)
        query = [self._query_prefix]
        for e, text in enumerate(query_line):
            query += (pre[e], text, aff[e])
        tail = "".join(query)
        return [_cut(head + lp + label + la + tail, cut_by_length) for label in self._label_space]

    def write_prompt(self, demos_indexes: Sequence[int], query_index: Optional[int] = None):
        """The prompt for demonstration indexes and a test index, with label noise (spec §5.4)."""
        rate = self._label_wrong_rate
        if rate < 0 or rate > 1:
            raise ValueError("The label wrong rate should be in [0, 1].")
        if query_index is None and self.pseudo_query_generater is None:
            raise ValueError("The query index should be given. If you want to use the pseudo query, "
                             "please set the pseudo query generater.")
        demo = self.triplet_dataset.demonstration
        count = len(demos_indexes)
        wrong = int(count * rate)
        if wrong != 0 and wrong / count != rate:
            warn(WRONG_LABEL_COUNT_WARNING)
        corrupted = self._label_error_stream.n_elements(demos_indexes, wrong) if wrong else ()
        rows, space, mapping = demo.table.rows, demo.label_space, demo.label_mapping
        size = len(rows)
        lines = []
        for v in demos_indexes:
            if not 0 <= v < size:
                raise ValueError(f"Index out of range: demonstration index {v} not in [0, {size}) "
                                 f"(dataset {self.triplet_dataset.name!r})")
            inputs, raw = rows[v]
            label = space[mapping[raw]]
            if v in corrupted:
                label = space[(space.index(label) + 1) % len(space)]
            lines.append((inputs, label))
        if self.pseudo_query_generater is not None:
            query = next(self.pseudo_query_generater)
        else:
            test = self.triplet_dataset.test.table.rows
            if not 0 <= query_index < len(test):
                raise ValueError(f"Index out of range: query index {query_index} not in [0, {len(test)}) "
                                 f"(dataset {self.triplet_dataset.name!r})")
            query = test[query_index][0]
        return self.write_prompt_from_dataline(lines, query, self.cut_by_length)

    def example(self, k: int = 8):
        """A sample prompt: k random demonstrations and a random query from the example stream."""
        demo_count = len(self.triplet_dataset.demonstration)
        if not isinstance(k, int) or k < 0 or k > demo_count:
            raise ValueError(f"Invalid number of demonstrations: k = {k!r}, expected 0 <= k <= {demo_count}")
        indexes = self._example_stream.index_set(k, demo_count)
        query = self._example_stream.int_in_range(0, len(self.triplet_dataset.test))
        return self.write_prompt(indexes, query)


def _cut(prompt: str, cut_by_length: int) -> str:
    """Drop the last ``cut_by_length`` characters (Python slice semantics, as the standard)."""
    return prompt[:len(prompt) - cut_by_length] if cut_by_length else prompt
