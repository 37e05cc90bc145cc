"""What a run asks a model, and what the model answers.

A :class:`Request` is one prompt (or, in noisy-channel mode, one prompt per label)
with its label space and where it comes from.  Backends answer requests with
:class:`Answer` values; the run never calls a model any other way.  Both are frozen:
a request travels from the prompt writer to the backend and the cache unchanged.
"""
import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Optional, Tuple, Union

Prompt = Union[str, Tuple[str, ...]]


@dataclass(frozen=True)
class Request:
    """One prompt to score.

    ``query_index`` is the prompt's position in its experimentor's ``prompt_set()``
    (passes after the first continue the numbering); ``pass_index`` numbers GLER's noise
    passes and Template_sens's templates.  Only ``prompt`` and ``label_space`` reach the
    model and the cache key; the rest says where the prompt comes from.
    """

    prompt: Prompt
    label_space: Tuple[str, ...]
    benchmark: str = ""
    dataset: str = ""
    query_index: int = 0
    pass_index: int = 0

    @property
    def noisy_channel(self) -> bool:
        return isinstance(self.prompt, tuple)

    @cached_property
    def _key(self) -> str:
        return content_key(self.prompt, self.label_space)

    def key(self) -> str:
        """SHA-256 of the prompt(s) and the label space: equal for equal model inputs (computed once)."""
        return self._key


def content_key(prompt: Prompt, label_space: Tuple[str, ...]) -> str:
    """SHA-256 of an unambiguous encoding: every string length-prefixed, prompt kind marked."""
    digest = hashlib.sha256(b"L" if isinstance(prompt, tuple) else b"S")
    for text in (prompt if isinstance(prompt, tuple) else (prompt,)):
        data = text.encode("utf-8")
        digest.update(b"%d:" % len(data))
        digest.update(data)
    digest.update(b"|")
    for label in label_space:
        data = label.encode("utf-8")
        digest.update(b"%d:" % len(data))
        digest.update(data)
    return digest.hexdigest()


def prompt_sha256(prompt: Prompt) -> str:
    """The SHA-256 of a prompt as results report it (noisy-channel prompts joined by U+0001)."""
    text = "\x01".join(prompt) if isinstance(prompt, tuple) else prompt
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Answer:
    """A model's answer to one request.

    ``prediction`` follows the inference contract (a vector aligned with the label space
    or an int label index) and is validated where the model is called.  Generative
    backends also give the generated ``text``; ``parsed`` is False when that text named no
    label and the backend's documented policy chose the prediction.
    """

    prediction: Any
    text: Optional[str] = None
    parsed: bool = True
