"""The prompt writer and the pseudo-query generators (the original's ``StaICC.prompt``).

The package is split by job; every name keeps its old import path here:

- :mod:`.template`: the frozen :class:`Template`, :class:`CompiledTemplate` and the pure
  writing functions :func:`write_prompt` and :func:`iter_prompts`;
- :mod:`.pseudo_queries`: the Contextual and Domain bias query generators;
- :mod:`.writer`: :class:`prompt_writter`, the stateful writer of one experimentor.
"""
# re-exports: every name the single module ``StaICC/prompt.py`` defined stays importable from here
from .pseudo_queries import domain_query_generator, empty_query_generator  # noqa: F401
from .template import (_KEY_ALIASES, _TEMPLATE_FIELDS, CompiledTemplate, DemoLine, Line, Prompt,  # noqa: F401
                       Template, WriterState, _cut, _is_str_tuple, iter_prompts, write_prompt)
from .writer import _check_str, _check_str_list, prompt_writter  # noqa: F401
