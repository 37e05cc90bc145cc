"""The text a run renders once and reuses: each demonstration's and each test query's part of a prompt.

A direct prompt is the instruction, its demonstrations' texts and its query's text, joined.
Within a run one demonstration appears in many prompts (GLER's five passes, the
sub-benchmarks that draw the same demonstrations) and one test query in many more, so
:meth:`~StaICC.prompt.template.CompiledTemplate.write_many` renders each into a
:class:`Rendered` table on first use and joins what the tables hold.  A table's text
depends only on the template (label-noise rate aside), the rows and the label words, so
tables can be shared by writes that agree on those (see ``write_many``'s ``pieces``).
"""
from typing import Any, Callable, Dict, Hashable, Sequence

#: a function of a row's input texts: its part of a direct prompt
InputsWriter = Callable[[Sequence[str]], str]


class Rendered(dict):
    """Text per key, rendered by ``render(key)`` on the first look-up and kept (a plain dict look-up after)."""

    __slots__ = ("render",)

    def __init__(self, render: Callable[[Any], str]) -> None:
        super().__init__()
        self.render = render

    def __missing__(self, key: Any) -> str:
        text = self[key] = self.render(key)
        return text


def table(store: Dict[Hashable, Rendered], key: Hashable, render: Callable[[], Callable[[Any], str]]) -> Rendered:
    """The table ``store`` keeps under ``key``, made (with the renderer ``render()`` builds) on first use."""
    found = store.get(key)
    if found is None:
        found = store[key] = Rendered(render())
    return found


def inputs_writer(compiled, before: str, after: str) -> InputsWriter:
    """inputs -> ``before`` [prefix_e input_e affix_e]... ``after``, the direct prompt's rule for a row.

    Between two consecutive inputs stands affix_e + prefix_(e+1); when that text is the same
    for every e (always with one input per row), a row with one input per prefix is
    prefix_1 + glue.join(inputs) + affix_last: a few C calls instead of a loop per row.
    Any other row goes through ``compiled._inputs_text`` (which also refuses a row with
    more inputs than prefixes).
    """
    template = compiled.template
    pre, aff = template.input_text_prefixes, template.input_text_affixes
    general = compiled._inputs_text
    glues = {aff[e] + pre[e + 1] for e in range(len(pre) - 1)}
    if len(glues) > 1:
        return lambda inputs: before + general(inputs) + after
    count, glue = len(pre), glues.pop() if glues else ""
    head, closing = before + (pre[0] if pre else ""), (aff[-1] if aff else "") + after

    def write(inputs: Sequence[str]) -> str:
        if len(inputs) == count:
            return head + glue.join(inputs) + closing
        return before + general(inputs) + after
    return write


def demonstration_renderer(compiled, words: Dict[Any, str]) -> Callable[[int], str]:
    """Demonstration index -> its input texts, then label prefix, its label's word in ``words``, label affix."""
    template, rows = compiled.template, compiled.rows
    size, checked = len(rows), compiled._checked
    writers = {raw: inputs_writer(compiled, "", template.label_prefix + word + template.label_affix)
               for raw, word in words.items()}

    def render(v: int) -> str:
        if not 0 <= v < size:
            checked(v)  # raises: the index is out of range
        inputs, raw = rows[v]
        return writers[raw](inputs)
    return render


def query_renderer(compiled) -> Callable[[int], str]:
    """Test index -> query prefix, the test item's input texts, label prefix."""
    write, query_inputs = query_writer(compiled), compiled.query_inputs
    return lambda query: write(query_inputs(query))


def query_writer(compiled) -> InputsWriter:
    """A query's input texts -> query prefix, [prefix_e input_e affix_e]..., label prefix."""
    return inputs_writer(compiled, compiled.template.query_prefix, compiled.template.label_prefix)
