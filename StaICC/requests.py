"""What a run asks a model, and what the model answers.

A :class:`Request` is one prompt (or, in noisy-channel mode, one prompt per label)
with its label space and where it comes from.  Backends answer requests with
:class:`Answer` values; the run never calls a model any other way.  Both are frozen:
a request travels from the prompt writer to the backend and the cache unchanged.
"""
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, List, Optional, Sequence, Tuple, Union

Prompt = Union[str, Tuple[str, ...]]


@dataclass(frozen=True)
class Request:
    """One prompt to score.

    ``query_index`` is the prompt's position in its experimentor's ``prompt_set()``
    (passes after the first continue the numbering); ``pass_index`` numbers GLER's noise
    passes and Template_sens's templates.  Only ``prompt`` and ``label_space`` reach the
    model and the cache key; the rest says where the prompt comes from.

    ``segments`` (only written for a backend whose ``needs_segments`` is true) is a direct
    prompt cut at its demonstration boundaries: (instruction, then per demonstration its
    input part and its label part, then the query part), concatenating to ``prompt``
    exactly.  It is no part of the key or of equality: it describes the same text.
    """

    prompt: Prompt
    label_space: Tuple[str, ...]
    benchmark: str = ""
    dataset: str = ""
    query_index: int = 0
    pass_index: int = 0
    segments: Optional[Tuple[str, ...]] = field(default=None, compare=False, repr=False)

    @property
    def noisy_channel(self) -> bool:
        return isinstance(self.prompt, tuple)

    @cached_property
    def digests(self) -> Tuple[bytes, bytes]:
        """(SHA-256, BLAKE2b-64) of :func:`canonical_content`, computed once per request.

        The SHA-256 is the key; the independent BLAKE2b digest lets the cache tell a hash
        collision from a hit.
        """
        body = canonical_content(self.prompt, self.label_space)
        return hashlib.sha256(body).digest(), hashlib.blake2b(body, digest_size=8).digest()

    def key(self) -> str:
        """SHA-256 (hex) of the prompt(s) and the label space: equal for equal model inputs."""
        return self.digests[0].hex()


def requests_of(prompts: Sequence[Prompt], label_space: Tuple[str, ...], benchmark: str, dataset: str,
                first_index: int, pass_index: int,
                segments: Optional[Sequence[Optional[Tuple[str, ...]]]] = None) -> List[Request]:
    """``Request(prompt, label_space, benchmark, dataset, first_index + q, pass_index, segments[q])``
    for each prompt ``q`` of one pass, equal to those calls field for field.

    A run builds one request per prompt (10^5 in a suite); the dataclass ``__init__`` of a
    frozen class sets each field through ``object.__setattr__``, so this writes the fields
    into the instance's attribute dictionary directly, in field order (the order that keeps
    the dictionary's keys shared with the class's other instances).
    """
    new = object.__new__
    out = []
    for q, prompt in enumerate(prompts):
        request = new(Request)
        fields = request.__dict__
        fields["prompt"] = prompt
        fields["label_space"] = label_space
        fields["benchmark"] = benchmark
        fields["dataset"] = dataset
        fields["query_index"] = first_index + q
        fields["pass_index"] = pass_index
        fields["segments"] = None if segments is None else segments[q]
        out.append(request)
    return out


_json_string = json.encoder.encode_basestring  # json's own C string encoder (ensure_ascii=False)


def canonical_content(prompt: Prompt, label_space: Tuple[str, ...]) -> bytes:
    """Compact JSON of ``[prompt or list of prompts, list of labels]``, UTF-8: the bytes keys hash."""
    quoted = _json_string(prompt) if isinstance(prompt, str) else "[" + ",".join(map(_json_string, prompt)) + "]"
    return ("[" + quoted + ",[" + ",".join(map(_json_string, label_space)) + "]]").encode("utf-8", "surrogatepass")


def content_key(prompt: Prompt, label_space: Tuple[str, ...]) -> str:
    return hashlib.sha256(canonical_content(prompt, label_space)).hexdigest()


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
