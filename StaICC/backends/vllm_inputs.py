"""What the vllm backend sends to the engine, and how it reads the answers: pure functions, no vLLM import.

**Label-token scoring (one engine request per prompt).**  When every label of a request
is scored by one token after one common context (``last_token``, the standard; and
``first_token`` / ``sequence`` when the joint tokenization gives one context and
single-token continuations), the prompt is sent once with ``max_tokens=1`` and the
log-probabilities of the label tokens at the next position are read from the sampled
position's logprobs.  Such a request reads the engine's prefix cache, so a query's GLER
passes and Triplet_bias's parts, sent next to each other in text order, share their
demonstrations' KV blocks.  How the label tokens are asked for (``label_logprobs=``):

* ``token_ids`` (vLLM with ``SamplingParams.logprob_token_ids``): exactly those tokens'
  log-probabilities, with ``allowed_token_ids`` set to the same tokens so that the sampled
  token (which takes one of the returned slots) is itself a label token;
* ``allowed_tokens`` (older vLLM): ``allowed_token_ids`` plus ``logprobs=len(labels)``.
  The returned values include every label only where logprobs are computed after the
  logits processors (vLLM V0, or V1 with the engine argument
  ``logprobs_mode=processed_logprobs``); they are then normalised over the labels, which
  the softmax over labels ignores.  A missing label is an error saying so;
* ``prompt_logprobs``: the previous path, one request per (prompt, label) reading prompt
  log-probabilities; it works on every vLLM, but vLLM does not read the prefix cache
  for a request with prompt log-probabilities, so every label recomputes the prompt.

**Prompt log-probabilities** remain the way to score multi-token labels and noisy-channel
prompts (the mean log-probability of each per-label prompt).
"""
import dataclasses
import inspect
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError, OperationError

LABEL_LOGPROBS = ("auto", "token_ids", "allowed_tokens", "prompt_logprobs")


@dataclasses.dataclass(frozen=True)
class EngineInput:
    """One engine request: token ids and what to read from its output.

    ``label_ids`` set: read the next-token log-probabilities of those tokens (one value per
    label, in label order).  Otherwise read prompt log-probabilities at positions
    ``[start, end)``, summed (or averaged with ``mean``): one value.
    """

    ids: Tuple[int, ...]
    label_ids: Optional[Tuple[int, ...]] = None
    start: int = 0
    end: int = 0
    mean: bool = False

    @property
    def values(self) -> int:
        return len(self.label_ids) if self.label_ids is not None else 1


def supports_field(sampling_params: Any, name: str) -> bool:
    """Whether a ``SamplingParams`` class accepts ``name`` (msgspec struct, dataclass or plain signature)."""
    fields = getattr(sampling_params, "__struct_fields__", None)
    if fields is not None:
        return name in fields
    if dataclasses.is_dataclass(sampling_params):
        return name in {f.name for f in dataclasses.fields(sampling_params)}
    try:
        return name in inspect.signature(sampling_params).parameters
    except (TypeError, ValueError):
        return False


def resolve_label_logprobs(choice: str, sampling_params: Any) -> str:
    """``auto`` -> ``token_ids`` where the class has ``logprob_token_ids``, else ``allowed_tokens``."""
    if choice == "auto":
        return "token_ids" if supports_field(sampling_params, "logprob_token_ids") else "allowed_tokens"
    if choice == "token_ids" and not supports_field(sampling_params, "logprob_token_ids"):
        raise InvalidValueError("model argument label_logprobs=token_ids needs a vLLM whose SamplingParams has "
                                "logprob_token_ids; use label_logprobs=allowed_tokens or prompt_logprobs")
    return choice


def sampling_arguments(mode: str, input_: EngineInput) -> Dict[str, Any]:
    """The ``SamplingParams`` keyword arguments of one engine request."""
    if input_.label_ids is None:
        return {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1}
    distinct = sorted(set(input_.label_ids))
    arguments: Dict[str, Any] = {"max_tokens": 1, "temperature": 0.0, "logprobs": len(distinct),
                                 "allowed_token_ids": distinct}
    if mode == "token_ids":
        arguments["logprob_token_ids"] = distinct
    return arguments


def sampling_for_inputs(make: Callable[..., Any], mode: str, inputs: Sequence[EngineInput]) -> List[Any]:
    """One ``SamplingParams`` per input (equal arguments share one object)."""
    made: Dict[str, Any] = {}
    out = []
    for input_ in inputs:
        arguments = sampling_arguments(mode, input_)
        key = repr(sorted(arguments.items()))
        if key not in made:
            made[key] = make(**arguments)
        out.append(made[key])
    return out


def text_order(inputs: Sequence[EngineInput]) -> List[int]:
    """Positions of ``inputs`` sorted by token ids: prompts with a common beginning meet in the scheduler."""
    return sorted(range(len(inputs)), key=lambda i: inputs[i].ids)


def read_value(output: Any, input_: EngineInput) -> List[float]:
    """The value(s) ``input_`` asks for, from the engine's ``RequestOutput``."""
    if input_.label_ids is not None:
        return _next_token_logprobs(output, input_.label_ids)
    return [_prompt_logprob(output, list(input_.ids), input_.start, input_.end, input_.mean)]


def _logprob(value: Any) -> float:
    return float(getattr(value, "logprob", value))


def _next_token_logprobs(output: Any, label_ids: Tuple[int, ...]) -> List[float]:
    completions = getattr(output, "outputs", None)
    table = None
    if completions:
        logprobs = getattr(completions[0], "logprobs", None)
        table = logprobs[0] if logprobs else None
    if table is None:
        raise OperationError("vllm returned no logprobs for the generated position; the engine must return "
                             "sample logprobs (SamplingParams.logprobs)")
    missing = [t for t in label_ids if t not in table]
    if missing:
        raise OperationError(f"vllm returned no log-probability for the label token(s) {missing}; with "
                             "label_logprobs=allowed_tokens the engine must compute logprobs after the logits "
                             "processors (engine argument logprobs_mode=processed_logprobs); or use "
                             "label_logprobs=prompt_logprobs")
    values = [_logprob(table[t]) for t in label_ids]
    for t, v in zip(label_ids, values):
        if not math.isfinite(v):
            raise OperationError(f"vllm returned the log-probability {v} for the label token {t}")
    return values


def _prompt_logprob(output: Any, ids: List[int], start: int, end: int, mean: bool) -> float:
    prompt_logprobs = getattr(output, "prompt_logprobs", None)
    if prompt_logprobs is None or len(prompt_logprobs) != len(ids):
        raise OperationError("vllm returned no prompt log-probabilities (RequestOutput.prompt_logprobs) "
                             f"for a prompt of {len(ids)} tokens; the engine must support prompt_logprobs")
    values = []
    for position in range(start, end):
        entry = prompt_logprobs[position]
        if entry is None or ids[position] not in entry:
            raise OperationError(f"vllm returned no log-probability for prompt position {position} (token "
                                 f"{ids[position]})")
        values.append(_logprob(entry[ids[position]]))
    return math.fsum(values) / len(values) if mean else math.fsum(values)
