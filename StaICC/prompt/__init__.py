"""The prompt writer and the pseudo-query generators (the original's ``StaICC.prompt``).

The package is split by job; the public names are importable from here:

- :mod:`.template`: the frozen :class:`Template`, :class:`CompiledTemplate` and the pure
  writing functions :func:`write_prompt` and :func:`iter_prompts`;
- :mod:`.pseudo_queries`: the Contextual and Domain bias query generators;
- :mod:`.writer`: :class:`prompt_writter`, the stateful writer of one experimentor.
"""
from .pseudo_queries import domain_query_generator, empty_query_generator
from .template import CompiledTemplate, DemoLine, Line, Prompt, Template, WriterState, iter_prompts, write_prompt
from .writer import prompt_writter

__all__ = ["domain_query_generator", "empty_query_generator", "CompiledTemplate", "DemoLine", "Line", "Prompt",
           "Template", "WriterState", "iter_prompts", "write_prompt", "prompt_writter"]
