"""The prompt writer, :class:`prompt_writter` (the original's name, kept).

It holds one experimentor's current :class:`~StaICC.prompt.template.Template`, its list
of departures from the standard, its label-noise and example streams and an optional
pseudo-query generator; every mutator replaces the template with a new value and the
writing itself is delegated to :class:`~StaICC.prompt.template.CompiledTemplate`.
This module holds only that state machine and the original's mutator API.
"""
from dataclasses import replace
from operator import itemgetter
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidTypeError, InvalidValueError, warn_tampering
from ..rng import fresh_stream
from ..standard import NOISY_CHANNEL_LABEL_AFFIX, NOISY_CHANNEL_LAST_INPUT_AFFIX
from ..validation import check_int, is_int
from .source import applied_template, checked_label_space, with_label_wrong_rate
from .template import CompiledTemplate, DemoLine, Prompt, Template, WriterState, dataline_writer


def _check_str(value, message: str) -> str:
    if not isinstance(value, str):
        raise InvalidValueError(message)
    return value


def _check_str_list(value, list_message: str, item_message: str) -> Tuple[str, ...]:
    if not isinstance(value, list):
        raise InvalidValueError(list_message)
    if not all(isinstance(v, str) for v in value):
        raise InvalidValueError(item_message)
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
            raise InvalidTypeError(f"restore() takes what snapshot() returned, got {type(state).__name__}")
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
        self._change_per_input("prefixes", new_prefixes)

    def change_input_text_affixes(self, new_affixes: List[str]) -> None:
        self._change_per_input("affixes", new_affixes)

    def _change_per_input(self, kind: str, texts: List[str]) -> None:
        """Set the input texts' ``kind`` ("prefixes" or "affixes"): one string per input element."""
        warn_tampering(f"input text {kind} changed", stacklevel=4)  # the user's call of change_input_text_*
        texts = _check_str_list(texts, f"Input text {kind} should be a list.",
                                f"Input text {kind} should be a list of strings.")
        self._check_element_count(texts, f"input text {kind}")
        self._set(f"input text {kind} changed", **{f"input_text_{kind}": texts})

    def _check_element_count(self, values: Sequence[str], what: str) -> None:
        expected = self.triplet_dataset.demonstration.input_element_numbers()
        if len(values) != expected:
            raise InvalidValueError(f"{what} need one entry per input element: got {len(values)}, the dataset "
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
        self._set("label space changed", label_space=checked_label_space(self.triplet_dataset, space))


    def set_label_wrong_rate(self, rate: float) -> None:
        warn_tampering(f"label wrong rate set to {rate!r}")
        self._set_label_wrong_rate(rate)
        self._tampered.append(f"label wrong rate set to {rate!r}")

    change_label_wrong_rate = set_label_wrong_rate  # the name the original README uses

    def _set_label_wrong_rate(self, rate: float) -> None:
        """Set the rate without recording a departure (GLER's passes are part of the standard)."""
        self.template = with_label_wrong_rate(self.template, rate)

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
            raise InvalidTypeError(f"set_config_dict expects a dict (as get_config_dict returns), got "
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
        applied = applied_template(self.triplet_dataset, template)
        self.reset()
        self.template = applied

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
            return dataline_writer(compiled.template, self.triplet_dataset, cut_by_length)(demos_lines, query_line)
        return compiled.write_from_datalines(demos_lines, query_line)

    def write_prompts(self, queries: Sequence[Tuple[Sequence[int], int]], pieces: dict,
                      segments: Optional[list] = None) -> List[Prompt]:
        """:meth:`write_prompt` for each (demonstration indexes, test index) in order, in one loop.

        ``pieces``: a dict the caller keeps for as long as the template (label-noise rate
        aside) stays; each demonstration's and test query's text is rendered into it once.
        ``segments``: a list that receives each prompt's segments (see ``CompiledTemplate.write_many``).
        """
        generator = self.pseudo_query_generater
        if generator is not None:
            queries = list(zip(map(itemgetter(0), queries), generator))  # one pseudo query per prompt, in order
        return self.compiled().write_many(queries, self._label_error_stream, pieces, segments)

    def write_prompt(self, demos_indexes: Sequence[int], query_index: Optional[int] = None) -> Prompt:
        """The prompt for demonstration indexes and a test index (or the next pseudo query), with label noise."""
        generator = self.pseudo_query_generater
        if query_index is None and generator is None:
            raise InvalidValueError("The query index should be given. If you want to use the pseudo query, "
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
