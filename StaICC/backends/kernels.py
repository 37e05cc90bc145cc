"""The original StaICC inference kernels, one prompt at a time.

These keep the original's public names, signatures and numbers so results
stay comparable with published StaICC figures.  Fixed defects of the original:

* ``cache_empty`` defaults to ``None``; the original evaluated
  ``torch.cuda.empty_cache()`` at import time, which initialised CUDA on
  import.  Pass ``torch.cuda.empty_cache`` explicitly to empty the cache.
* ``return_hidden_state`` and ``return_full_vocab_prob`` together return
  ``(ret, hidden, full_vocab)`` instead of crashing.
* ``full_vocab`` holds **logits** (the original's name says "prob").
  It and ``hidden`` are 1-D float32 NumPy arrays.
* ``_GPT_API_call`` uses the OpenAI >= 1.0 client instead of the removed legacy
  ``Completion`` interface; it needs ``pip install openai`` and an
  API key, and is never called by StaICC itself.

For speed use :class:`StaICC.backends.causal_lm.CausalLMScorer`,
which batches prompts and gives the same probabilities.
"""
from typing import Any, Callable, List, Optional, Sequence

from ..errors import InvalidValueError, MissingExtraError
from ..extras import require
from ..numeric import softmax
from ..validation import check_label_space

__all__ = ["model_device", "label_token_ids", "inference_standard_template", "standard_ICL_inference_with_torch_Causal_LM", "batched_ICL_inference_with_torch_Causal_LM", "noisy_channel_ICL_inference_with_torch_Causal_LM", "standard_ICL_inference_with_API_call"]


def model_device(model: Any) -> Any:
    """The device of the model's first parameter (CPU for a parameter-less model)."""
    torch = require("torch", "StaICC HuggingFace kernels")
    for parameter in model.parameters():
        return parameter.device
    return torch.device("cpu")


def label_token_ids(tokenizer: Any, label_space: Sequence[str]) -> List[int]:
    """Each label tokenized alone with default special tokens; its last id.

    A multi-token label is scored by its final token only, and a tokenizer that
    appends EOS would score EOS: that is the standard's behaviour, kept so that
    numbers stay comparable.  Use ``CausalLMScorer(scoring="sequence")`` to
    score whole labels.
    """
    ids = []
    for label in label_space:
        encoded = tokenizer(label)["input_ids"]
        if len(encoded) == 0:
            raise InvalidValueError(f"the label {label!r} tokenizes to no token at all; it cannot be scored")
        ids.append(int(encoded[-1]))
    return ids


def inference_standard_template(prompt: Any, label_space: Sequence[str]) -> List[float]:  # noqa: ARG001  (a model function's signature: f(prompt, label_space))
    """The uniform distribution, a template for writing your own inference."""
    check_label_space(label_space, at=" in inference_standard_template", name="label_space")
    n = len(label_space)
    return [1 / n] * n


def standard_ICL_inference_with_torch_Causal_LM(
    prompt: str,
    model: Any,
    tokenizer: Any,
    label_space: Sequence[str],
    cache_empty: Optional[Callable[[], Any]] = None,
    calibration_function: Optional[Callable[..., Any]] = None,
    return_hidden_state: bool = False,
    return_full_vocab_prob: bool = False,
) -> Any:
    """One forward pass; softmax over the logits of each label's last token.

    Returns the probability list (or ``calibration_function(probs, full_vocab,
    hidden)``); with ``return_hidden_state`` ``(ret, hidden)``; with
    ``return_full_vocab_prob`` ``(ret, full_vocab)``; with both
    ``(ret, hidden, full_vocab)``.
    """
    torch = require("torch", "standard_ICL_inference_with_torch_Causal_LM")
    check_label_space(label_space, at=" in standard_ICL_inference_with_torch_Causal_LM", name="label_space")
    if cache_empty is not None:
        cache_empty()
    want_hidden = return_hidden_state or calibration_function is not None
    with torch.no_grad():
        encoded = tokenizer(prompt, return_tensors="pt")
        device = model_device(model)
        output = model(
            input_ids=encoded["input_ids"].to(device),
            attention_mask=encoded["attention_mask"].to(device) if "attention_mask" in encoded else None,
            output_hidden_states=want_hidden,
        )
        full_vocab = output.logits[0, -1].float().cpu().numpy()
        hidden = output.hidden_states[-1][-1, -1].float().cpu().numpy() if want_hidden else None
    label_logits = [full_vocab[token] for token in label_token_ids(tokenizer, label_space)]
    label_probs = softmax(label_logits)  # max subtracted in float32, the rest in double
    ret = calibration_function(label_probs, full_vocab, hidden) if calibration_function is not None else label_probs
    if return_hidden_state and return_full_vocab_prob:
        return ret, hidden, full_vocab
    if return_hidden_state:
        return ret, hidden
    if return_full_vocab_prob:
        return ret, full_vocab
    return ret


def batched_ICL_inference_with_torch_Causal_LM(
    prompt: List[str],
    model: Any,
    tokenizer: Any,
    label_space: Sequence[str],
    cache_empty: Optional[Callable[[], Any]] = None,
    batch_calibration_function: Optional[Callable[[List[Any]], List[Any]]] = None,
    inside_calibration_function: Optional[Callable[..., Any]] = None,
) -> List[Any]:
    """The one-prompt kernel once per prompt, in order (no real batching; see ``CausalLMScorer``)."""
    if isinstance(prompt, str) or not isinstance(prompt, (list, tuple)):
        raise InvalidValueError("batched_ICL_inference_with_torch_Causal_LM: prompt must be a list of prompts "
                                f"(use it with batched_inference=True), got {type(prompt).__name__}")
    results = [
        standard_ICL_inference_with_torch_Causal_LM(
            one, model, tokenizer, label_space, cache_empty, inside_calibration_function
        )
        for one in prompt
    ]
    if batch_calibration_function is not None:
        return batch_calibration_function(results)
    return results


def noisy_channel_ICL_inference_with_torch_Causal_LM(
    prompt: List[str],
    model: Any,
    tokenizer: Any,
    label_space: Sequence[str],
    cache_empty: Optional[Callable[[], Any]] = None,
) -> List[float]:
    """Noisy channel: softmax over loss₀ − loss_ℓ, with loss_ℓ the mean LM loss of label ℓ's prompt."""
    torch = require("torch", "noisy_channel_ICL_inference_with_torch_Causal_LM")
    check_label_space(label_space, at=" in noisy_channel_ICL_inference_with_torch_Causal_LM", name="label_space")
    if isinstance(prompt, str) or not isinstance(prompt, (list, tuple)) or len(prompt) != len(label_space):
        raise InvalidValueError("noisy_channel_ICL_inference_with_torch_Causal_LM: prompt must be the list of "
                                f"{len(label_space)} per-label prompts of one query (noisy_channel=True), got {prompt!r:.200}")
    if cache_empty is not None:
        cache_empty()
    device = model_device(model)
    losses = []
    with torch.no_grad():
        for one in prompt:
            input_ids = tokenizer(one, return_tensors="pt")["input_ids"].to(device)
            losses.append(float(model(input_ids=input_ids, labels=input_ids).loss.float().item()))
    return softmax([losses[0] - loss for loss in losses])


def standard_ICL_inference_with_API_call(
    API_call: Callable[[Any], str], prompt: Any, label_space: Sequence[str], *, parse: bool = False
) -> List[float]:
    """Softmax of the one-hot exact-match of the API's answer with each label.

    The standard compares the answer with each label by exact string equality, so
    " Positive" names no label and the result is uniform.  That is kept (numbers stay
    comparable), but no longer silently: an answer that matches no label exactly warns,
    naming the label the documented parser (:mod:`StaICC.backends.generative`: case,
    whitespace and punctuation insensitive, first mention wins) reads in it.  With
    ``parse=True`` the parser decides instead of exact equality.
    """
    check_label_space(label_space, at=" in standard_ICL_inference_with_API_call", name="label_space")
    answer = API_call(prompt)
    exact = [1 if answer == label else 0 for label in label_space]
    if any(exact):
        return softmax(exact)
    from .generative import parse_label
    index = parse_label(answer, label_space) if isinstance(answer, str) else None
    if parse and index is not None:
        return softmax([1 if c == index else 0 for c in range(len(label_space))])
    import warnings
    reading = (f"the parser reads label {label_space[index]!r} in it; pass parse=True to use that"
               if index is not None else "the parser finds no label in it either")
    warnings.warn(f"standard_ICL_inference_with_API_call: the answer {answer!r:.80} is not exactly one of "
                  f"{list(label_space)}, so the prediction is uniform; {reading}", UserWarning, stacklevel=2)
    return softmax(exact)


def _GPT_API_call(prompt: str, model_name: str = "gpt-3.5-turbo-instruct") -> str:
    """API helper: one greedy token from OpenAI's completions endpoint.

    Network access is the caller's choice: StaICC never calls this itself.
    Needs ``pip install openai`` (>= 1.0) and ``OPENAI_API_KEY`` in the environment.
    """
    try:
        import openai
    except ImportError:
        raise MissingExtraError("_GPT_API_call needs the 'openai' package (>= 1.0): pip install openai. "
                                "StaICC itself never contacts a network service.") from None
    if not hasattr(openai, "OpenAI"):
        raise MissingExtraError("_GPT_API_call needs openai >= 1.0 (the legacy Completion API was removed); "
                                "upgrade with: pip install -U openai")
    client = openai.OpenAI()
    response = client.completions.create(model=model_name, prompt=prompt, max_tokens=1, temperature=0)
    return response.choices[0].text
