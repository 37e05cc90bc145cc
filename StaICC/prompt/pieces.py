"""The text a run renders once and reuses: each demonstration's and each test query's part of a prompt.

A direct prompt is the instruction, its demonstrations' texts and its query's text, joined.
Within a run one demonstration appears in many prompts (GLER's five passes, the
sub-benchmarks that draw the same demonstrations) and one test query in many more, so
:meth:`~StaICC.prompt.template.CompiledTemplate.write_many` keeps them in tables that
render a key on its first look-up (``__missing__``) and joins what the tables hold.  A
table's text depends only on the template (label-noise rate aside), the rows and the
label words, so tables can be shared by writes that agree on those (see ``write_many``'s
``pieces``).

A row's input texts are written [prefix_e input_e affix_e]...; between two consecutive
inputs stands affix_e + prefix_(e+1).  When that text is the same for every e (always with
one input per row), a row with one input per prefix is first prefix + glue.join(inputs) +
last affix: a few C calls instead of a loop per row (:func:`joined_shape`).  Any other row
goes through ``CompiledTemplate._inputs_text``, which also refuses a row with more inputs
than prefixes.
"""
from typing import Any, Callable, Dict, Hashable, Sequence, Tuple

#: a function of a row's input texts: its part of a direct prompt
InputsWriter = Callable[[Sequence[str]], str]


def joined_shape(template) -> Tuple[int, str, str, str]:
    """(count, first prefix, glue, last affix) of the joined shape; count is -1 when no row takes it."""
    pre, aff = template.input_text_prefixes, template.input_text_affixes
    glues = {aff[e] + pre[e + 1] for e in range(len(pre) - 1)}
    if len(glues) > 1:
        return -1, "", "", ""
    return len(pre), pre[0] if pre else "", glues.pop() if glues else "", aff[-1] if aff else ""


def inputs_writer(compiled, before: str, after: str) -> InputsWriter:
    """inputs -> ``before`` [prefix_e input_e affix_e]... ``after``, the direct prompt's rule for a row."""
    count, first, glue, last = joined_shape(compiled.template)
    head, closing, general = before + first, last + after, compiled._inputs_text

    def write(inputs: Sequence[str]) -> str:
        if len(inputs) == count:
            return "".join((head, glue.join(inputs), closing))
        return before + general(inputs) + after
    return write


class DemonstrationTexts(dict):
    """Demonstration index -> its input texts, label prefix, its label's word in ``words``, label affix."""

    __slots__ = ("rows", "size", "checked", "writers")

    def __init__(self, compiled, words: Dict[Any, str]) -> None:
        super().__init__()
        template = compiled.template
        self.rows, self.size, self.checked = compiled.rows, len(compiled.rows), compiled._checked
        # one writer per raw label: the row's inputs, then label prefix, the label's word, label affix
        self.writers = {raw: inputs_writer(compiled, "", template.label_prefix + word + template.label_affix)
                        for raw, word in words.items()}

    def __missing__(self, v: int) -> str:
        if not 0 <= v < self.size:
            self.checked(v)  # raises: the index is out of range
        inputs, raw = self.rows[v]
        text = self[v] = self.writers[raw](inputs)
        return text


class QueryTexts(dict):
    """Test index -> query prefix, the test item's input texts, label prefix."""

    __slots__ = ("write", "query_inputs")

    def __init__(self, compiled) -> None:
        super().__init__()
        self.write, self.query_inputs = query_writer(compiled), compiled.query_inputs

    def __missing__(self, query: int) -> str:
        text = self[query] = self.write(self.query_inputs(query))
        return text


def query_writer(compiled) -> InputsWriter:
    """A query's input texts -> query prefix, [prefix_e input_e affix_e]..., label prefix."""
    return inputs_writer(compiled, compiled.template.query_prefix, compiled.template.label_prefix)


def table(store: Dict[Hashable, dict], key: Hashable, make: Callable[[], dict]) -> Any:
    """The table ``store`` keeps under ``key``, made by ``make()`` on first use."""
    found = store.get(key)
    if found is None:
        found = store[key] = make()
    return found
