"""Thinking sections of reasoning models in generate mode: cut off before the label parser reads the text.

Reasoning models write a *thinking section* before their answer (``<think>...</think>``),
and a label named while thinking is not the answer.  :class:`ThinkingRule` is the one
rule the hf, vllm and openai backends apply (through
:class:`~StaICC.backends.generative.AnswerMapper`):

* the section ends at the **last** end marker (``think_end_token``, default ``</think>``);
  the parser reads only the text after it, as lm-evaluation-harness does;
* a text that opens the section (``think_start_token``, default ``<think>``, after leading
  whitespace) and never ends it is *unfinished*: the answer is unparsed, whatever the text
  names.  ``thinking=on`` takes every text to start inside the section (a chat template
  or a server that opens it in the prompt, as DeepSeek-R1's and Qwen3's templates do), so
  a text without an end marker is unfinished too; ``thinking=off`` reads the whole text;
  ``thinking=auto`` (the default) recognises a section by its markers only, so a model
  that does not think is read as before;
* ``thinking_budget=N`` (tokens): the backend lets the model generate N tokens more than
  its answer limit, and an answer whose thinking section took more than N tokens (counted
  up to and including the end marker) is unparsed.  The answer scored is always one the
  model wrote after closing its own thinking: the end marker is never forced into the text
  (vLLM's ``thinking_token_budget`` forces it, and then the answers depend on the forced
  wording).  A backend that cannot count tokens (an OpenAI-compatible server that does not
  report ``reasoning_tokens``) bounds the section by the generation limit alone.

Log-probability scoring reads the labels' probabilities right after the prompt, where a
reasoning model would start to think, so a backend refuses it with thinking enabled
(``thinking=on`` or a budget), as lm-evaluation-harness does.

The thinking section is measured in every answer that has one (:class:`~StaICC.requests.Thinking`:
characters, tokens where counted, finished or not), recorded per query and summed per dataset.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..errors import InvalidValueError
from . import _args
from ..requests import Thinking

#: how generated text is read for a thinking section (see the module docstring)
THINKING_MODES = ("auto", "on", "off")
#: the backend arguments of the rule: every generative backend takes them
THINKING_ARGS = ("thinking", "think_start_token", "think_end_token", "thinking_budget")
DEFAULT_START, DEFAULT_END = "<think>", "</think>"


@dataclass(frozen=True)
class ThinkingSplit:
    """A generated text cut in two: ``answer`` (what the parser reads), ``thinking`` (None: no section)."""

    answer: str
    thinking: Optional[str]
    finished: bool = True


@dataclass(frozen=True)
class ThinkingRule:
    """Where a generated text's thinking section is, and how long it may be (see the module docstring)."""

    mode: str = "auto"
    start: str = DEFAULT_START
    end: str = DEFAULT_END
    budget: Optional[int] = None

    @classmethod
    def from_arguments(cls, arguments: Dict[str, Any]) -> "ThinkingRule":
        """The rule from backend arguments (CLI strings or Python values, or a rule as ``thinking``), removed
        from ``arguments``."""
        if isinstance(arguments.get("thinking"), ThinkingRule):
            return arguments.pop("thinking")
        mode = _args.as_choice(arguments.pop("thinking", "auto"), "thinking", THINKING_MODES)
        start = _marker(arguments.pop("think_start_token", DEFAULT_START), "think_start_token")
        end = _marker(arguments.pop("think_end_token", DEFAULT_END), "think_end_token")
        budget = _args.as_int(arguments.pop("thinking_budget", None), "thinking_budget", minimum=1, optional=True)
        if start == end:
            raise InvalidValueError(f"model arguments think_start_token and think_end_token are both {start!r}; "
                                    "a thinking section needs two different markers")
        if budget is not None and mode == "off":
            raise InvalidValueError("model argument thinking_budget needs thinking=auto or thinking=on; "
                                    "thinking=off reads the whole text as the answer")
        return cls(mode, start, end, budget)

    @property
    def enabled(self) -> bool:
        """Thinking asked for (``thinking=on`` or a budget): log-probability scoring is then refused."""
        return self.mode == "on" or self.budget is not None

    def extra_tokens(self) -> int:
        """Tokens the backend adds to its generation limit: the budget, so an answer after it has its room."""
        return self.budget or 0

    def identity(self) -> Dict[str, Any]:
        """What changes how a text is read: part of a generative backend's identity."""
        return {"mode": self.mode, "start": self.start, "end": self.end, "budget": self.budget}

    def departures(self) -> List[str]:
        return [f"thinking budget of {self.budget} tokens (thinking_budget={self.budget})"] if self.budget else []

    def check_scoring(self, scoring: str) -> None:
        """Refuse log-probability scoring with thinking enabled, saying why."""
        if self.enabled and scoring != "generate":
            asked = "thinking=on" if self.mode == "on" else f"thinking_budget={self.budget}"
            raise InvalidValueError(f"model argument {asked} asks for a thinking section, which scoring={scoring} cannot "
                                    "have: log-probability scoring reads the labels right after the prompt, where a reasoning "
                                    "model would start to think. Use scoring=generate, or leave thinking settings out")

    def opens_in_prompt(self, prompt: str) -> bool:
        """Whether ``prompt`` (a chat template's output) ends inside an opened thinking section."""
        return self.mode != "off" and prompt.rstrip().endswith(self.start)

    def split(self, text: str) -> ThinkingSplit:
        """The answer part of ``text`` and its thinking section (the rule of the module docstring)."""
        if self.mode == "off":
            return ThinkingSplit(text, None)
        cut = text.rfind(self.end)
        if cut >= 0:
            return ThinkingSplit(text[cut + len(self.end):], self._without_start(text[:cut]))
        stripped = text.lstrip()
        if stripped.startswith(self.start):
            return ThinkingSplit("", stripped[len(self.start):], finished=False)
        if self.mode == "on":
            return ThinkingSplit("", text, finished=False)
        return ThinkingSplit(text, None)

    def _without_start(self, head: str) -> str:
        stripped = head.lstrip()
        return stripped[len(self.start):] if stripped.startswith(self.start) else head

    def measure(self, split: ThinkingSplit, tokens: Optional[int]) -> Optional[Thinking]:
        """The :class:`Thinking` record of a split text (None: no section)."""
        if split.thinking is None:
            return None
        over = self.budget is not None and tokens is not None and split.finished and tokens > self.budget
        return Thinking(len(split.thinking), tokens, split.finished, over)

    def section_tokens(self, ids: Sequence[int], decode: Callable[[Sequence[int]], str]) -> Optional[int]:
        """Generated tokens up to and including the section's end marker (all of them when it never ended;
        None: no section): the shortest prefix of ``ids`` whose decoded text holds every end marker the
        whole text holds, found by bisection (a few decodes, not one per token)."""
        text = decode(ids)
        split = self.split(text)
        if split.thinking is None:
            return None
        if not split.finished:
            return len(ids)
        markers = text.count(self.end)
        low, high = 1, len(ids)
        while low < high:
            middle = (low + high) // 2
            if decode(ids[:middle]).count(self.end) >= markers:
                high = middle
            else:
                low = middle + 1
        return low


def unparsed_reason(thinking: Optional[Thinking], rule: ThinkingRule) -> Optional[str]:
    """Why a text with this thinking section cannot name the answer (None: it can)."""
    if thinking is None:
        return None
    if not thinking.finished:
        return f"its thinking section never ended ({rule.end!r} was not generated)"
    if thinking.over_budget:
        return f"its thinking section took {thinking.tokens} tokens, over thinking_budget={rule.budget}"
    return None


def with_reasoning(content: Optional[str], reasoning: Optional[str], finished: bool, rule: ThinkingRule) -> str:
    """The text of a server answer that returns the reasoning apart (vLLM's ``reasoning_content``):
    the reasoning written as a thinking section before the content, so that one rule reads both kinds."""
    if reasoning is None:
        return content or ""
    if not finished:
        return rule.start + reasoning
    return rule.start + reasoning + rule.end + (content or "")


def _marker(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidValueError(f"model argument {name} must be a non-empty marker such as {DEFAULT_END!r}, got {value!r}")
    return value
