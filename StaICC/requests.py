"""What a run asks a model, and what the model answers.

A :class:`Request` is one prompt (or, in noisy-channel mode, one prompt per label)
with its label space and where it comes from.  Backends answer requests with
:class:`Answer` values; the run never calls a model any other way.  Both are frozen:
a request travels from the prompt writer to the backend and the cache unchanged.
"""
import hashlib
import sys
from array import array
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

Prompt = Union[str, Tuple[str, ...]]

#: what a request asks of the model: the label scores of the inference contract (every run's
#: requests), or the prompt's last-position full-vocabulary logits or last hidden state (the
#: representations some calibrations read; only a backend that lists the kind in its
#: ``request_kinds`` answers them)
LABELS, FULL_VOCAB, HIDDEN = "labels", "full_vocab", "hidden"
#: the label log-probabilities and their gradient with respect to a re-weighting of the attention on the
#: demonstrations' label words (StaICC.backends.hf_anchors; label-word anchor re-weighting reads it)
ANCHORS = "anchors"
REQUEST_KINDS = (LABELS, FULL_VOCAB, HIDDEN, ANCHORS)
#: each kind as a message names what it asks
KIND_NAMES = {LABELS: "label scores", FULL_VOCAB: "full-vocabulary logits", HIDDEN: "hidden states",
              ANCHORS: "attention on label-word anchors"}


def state_vector(values: Any) -> "array":
    """A representation answer as it travels and is stored: ``array('f')``, the model's float32 values.

    Four bytes per value whatever the vocabulary (a Python list of floats takes 32), read
    without copying by NumPy (``numpy.frombuffer(vector, numpy.float32)``).  ``values``: an
    ``array('f')`` (kept), a float NumPy array or tensor row, or a sequence of numbers
    (rounded to float32, as the standard's kernel casts them).
    """
    if isinstance(values, array) and values.typecode == "f":
        return values
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor
        values = values.detach().float().cpu().numpy()
    if hasattr(values, "astype") and hasattr(values, "tobytes"):  # a NumPy array: its bytes, as float32
        vector = array("f")
        vector.frombytes(values.astype("=f4", copy=False).reshape(-1).tobytes())
        return vector
    return array("f", values)


class _kept:
    """A read-only attribute computed on first use and kept in the instance's ``__dict__``.

    ``functools.cached_property`` without the lock it takes on every first use before
    Python 3.12: the value is a pure function of a frozen object, so two threads computing
    it at once store equal values.  Later reads find the instance's own entry first.
    """

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        self.compute, self.name, self.__doc__ = compute, compute.__name__, compute.__doc__

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


@dataclass(frozen=True)
class Request:
    """One prompt to score.

    ``query_index`` is the prompt's position in its experimentor's ``prompt_set()``
    (passes after the first continue the numbering); ``pass_index`` numbers GLER's noise
    passes and Template_sens's templates.  Only ``prompt`` and ``label_space`` reach the
    model and the cache key (with ``kind``, when it is not the default); the rest says where
    the prompt comes from.

    ``kind`` (one of :data:`REQUEST_KINDS`) says what is asked: the label scores
    (``"labels"``, every run's requests), or a representation of the prompt
    (``"full_vocab"``: its last-position logits over the whole vocabulary; ``"hidden"``: its
    last-position last-layer hidden state), answered as a float32 vector.

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
    kind: str = LABELS

    @property
    def noisy_channel(self) -> bool:
        return isinstance(self.prompt, tuple)

    @_kept
    def digests(self) -> Tuple[bytes, bytes]:
        """(SHA-256, BLAKE2b-64) of :func:`canonical_content`, computed once per request.

        The SHA-256 is the key; the independent BLAKE2b digest lets the cache tell a hash
        collision from a hit.
        """
        body = canonical_content(self.prompt, self.label_space, self.kind)
        return hashlib.sha256(body).digest(), hashlib.blake2b(body, digest_size=8).digest()

    def key(self) -> str:
        """SHA-256 (hex) of the prompt(s), the label space and the kind: equal for equal model inputs."""
        return self.digests[0].hex()



def requests_of(prompts: Sequence[Prompt], label_space: Tuple[str, ...], benchmark: str, dataset: str,
                first_index: int, pass_index: int,
                segments: Optional[Sequence[Optional[Tuple[str, ...]]]] = None,
                positions: Optional[Sequence[int]] = None, kind: str = LABELS) -> List[Request]:
    """``Request(prompt, label_space, benchmark, dataset, first_index + q, pass_index, segments[q], kind)``
    for each prompt ``q`` of one pass, equal to those calls field for field (``positions``:
    prompt ``q`` is query ``positions[q]`` of the pass, for a pass written in part).

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
        fields["query_index"] = first_index + (q if positions is None else positions[q])
        fields["pass_index"] = pass_index
        fields["segments"] = None if segments is None else segments[q]
        fields["kind"] = kind
        out.append(request)
    return out


def requests_asking(requests: Sequence[Request], kind: str) -> List[Request]:
    """Each request asking for ``kind`` instead: the same prompt, label space and origin (as :func:`requests_of`
    builds them, field by field)."""
    if kind == LABELS and all(r.kind == LABELS for r in requests):
        return list(requests)
    new = object.__new__
    out = []
    for request in requests:
        copy = new(Request)
        fields = copy.__dict__
        for name in _FIELDS:
            fields[name] = request.__dict__[name]
        fields["kind"] = kind
        out.append(copy)
    return out


_FIELDS = ("prompt", "label_space", "benchmark", "dataset", "query_index", "pass_index", "segments")


def canonical_content(prompt: Prompt, label_space: Tuple[str, ...], kind: str = LABELS) -> bytes:
    """Compact JSON of ``[prompt or list of prompts, list of labels]``, UTF-8: the bytes keys hash.

    The same bytes as ``json.dumps([prompt, list(label_space)], ensure_ascii=False,
    separators=(",", ":")).encode("utf-8", "surrogatepass")`` (a tuple prompt as a list),
    built from bytes: see :func:`_json_string`.  A request of another kind than the label
    scores has the kind as a third element (``[prompt, labels, "hidden"]``), so its key never
    equals a label request's, and every label request keeps the key it always had.
    """
    tail = b"]" if kind == LABELS else b',"' + _json_string(kind) + b'"]'
    if isinstance(prompt, str):
        return b"".join((b'["', _json_string(prompt), b'",', _labels_json(label_space), tail))
    quoted = b",".join([b'"' + _json_string(part) + b'"' for part in prompt])
    return b"".join((b"[[", quoted, b"],", _labels_json(label_space), tail))


#: the bytes JSON leaves as they are inside a string: all but the C0 controls, '"' and '\\'
_PLAIN = bytes(byte for byte in range(0x20, 0x100) if byte not in b'"\\')
#: each escaped byte's escape, as json writes it (short forms where JSON has one, else \u00xx)
_ESCAPES = {bytes([byte]): {0x22: b'\\"', 0x5C: b"\\\\", 0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0C: b"\\f",
                            0x0D: b"\\r"}.get(byte, b"\\u%04x" % byte)
            for byte in range(0x100) if bytes([byte]) not in _PLAIN}


def _json_string(text: str) -> bytes:
    """JSON's escaping of ``text`` (``ensure_ascii=False``, without the quotes), in UTF-8.

    Escaping works on the UTF-8 bytes: the characters JSON escapes (controls, quote,
    backslash) are single bytes there, and no byte of a multi-byte character (lone
    surrogates included, under "surrogatepass") is one of them.  One pass finds the bytes
    to escape; each one present is then replaced throughout, the backslash first, since
    the other escapes write backslashes.
    """
    data = text.encode("utf-8", "surrogatepass")
    special = data.translate(None, _PLAIN)
    if not special:
        return data
    if b"\\" in special:
        data = data.replace(b"\\", b"\\\\")
        special = special.replace(b"\\", b"")
    while special:
        byte = special[:1]
        data = data.replace(byte, _ESCAPES[byte])
        special = special.replace(byte, b"")
    return data


_LABELS_JSON: dict = {}  # label space -> its JSON list; bounded (a run uses a few label spaces)


def _labels_json(label_space: Tuple[str, ...]) -> bytes:
    """``label_space`` as a JSON list of strings, kept for the next request of the same label space."""
    found = _LABELS_JSON.get(label_space) if type(label_space) is tuple else None
    if found is None:
        found = b"[" + b",".join([b'"' + _json_string(label) + b'"' for label in label_space]) + b"]"
        if type(label_space) is tuple:
            if len(_LABELS_JSON) >= 256:
                _LABELS_JSON.clear()
            _LABELS_JSON[label_space] = found
    return found


def content_key(prompt: Prompt, label_space: Tuple[str, ...], kind: str = LABELS) -> str:
    return hashlib.sha256(canonical_content(prompt, label_space, kind)).hexdigest()


def prompt_sha256(prompt: Prompt) -> str:
    """The SHA-256 of a prompt as results report it (noisy-channel prompts joined by U+0001)."""
    text = "\x01".join(prompt) if isinstance(prompt, tuple) else prompt
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Thinking:
    """The thinking section of a generated answer (``<think>...</think>``), measured.

    ``chars``: its characters, markers excluded; ``tokens``: the generated tokens up to and
    including its end marker (all of them when it never ended), None where the backend
    cannot count them; ``finished``: whether the end marker was generated; ``over_budget``:
    it ended after more tokens than the backend's ``thinking_budget``.
    """

    chars: int
    tokens: Optional[int]
    finished: bool
    over_budget: bool = False


#: ``__slots__`` where dataclasses make them (Python 3.10+): a run holds one Answer per request (10^5 in a suite), and
#: an instance without a ``__dict__`` takes half the memory
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}


@dataclass(frozen=True, **_SLOTS)
class Answer:
    """A model's answer to one request.

    ``prediction`` follows the inference contract (a vector aligned with the label space
    or an int label index) and is validated where the model is called.  Generative
    backends also give the generated ``text``; ``parsed`` is False when that text named no
    label and the backend's documented policy chose the prediction.  ``thinking``
    measures the text's thinking section, when it has one (see
    :mod:`StaICC.backends.generative`); the cache does not keep it.
    """

    prediction: Any
    text: Optional[str] = None
    parsed: bool = True
    thinking: Optional[Thinking] = None


def _field_setter(name: str) -> Callable[[Answer, Any], None]:
    """A setter that writes one field of an Answer made by ``object.__new__`` (the frozen ``__setattr__`` refuses):
    the slot's own descriptor where Answer has slots, else ``object.__setattr__``."""
    slot = vars(Answer).get(name)
    if hasattr(slot, "__set__"):
        return slot.__set__  # type: ignore[no-any-return, union-attr]
    return lambda answer, value: object.__setattr__(answer, name, value)


#: (prediction, text, parsed, thinking) setters for the cache's decoders, which build Answers in bulk without the
#: frozen dataclass's per-field ``__init__``; every field is written, as ``__init__`` writes them
ANSWER_SETTERS = tuple(map(_field_setter, ("prediction", "text", "parsed", "thinking")))


def answers_with(predictions: Sequence[Any], like: Optional[Sequence[Answer]] = None) -> List[Answer]:
    """``Answer(p)`` for each prediction p, or with ``like``, ``Answer(p, a.text, a.parsed, a.thinking)`` with the
    answer a at p's position (a calibration's rows, beside the model's answers they calibrate).

    Built as the cache's decoders build answers, every field written through :data:`ANSWER_SETTERS`: half the
    time of the frozen dataclass's ``__init__`` (a method's pass makes one answer per query, 10^4 in a suite).
    """
    set_prediction, set_text, set_parsed, set_thinking = ANSWER_SETTERS
    new, out = object.__new__, []
    append = out.append
    for prediction, model in zip(predictions, repeat(_PLAIN_ANSWER) if like is None else like):
        answer = new(Answer)
        set_prediction(answer, prediction)
        set_text(answer, model.text)
        set_parsed(answer, model.parsed)
        set_thinking(answer, model.thinking)
        append(answer)
    return out


_PLAIN_ANSWER = Answer(None)  # an answer's fields but its prediction, as Answer(p) leaves them


_LABEL_ANSWERS: dict = {}  # label index -> its shared Answer, for the indexes label spaces have reached


def label_answer(index: int) -> Answer:
    """``Answer(index)`` for a validated label index, one shared object per index.

    Answers are frozen and an int is immutable, so every request answered with label k
    can hold the same object; a run answering with label indices then builds no Answer
    per request.  Callers pass only indexes checked against a label space, so the table
    stays as small as the largest label space (``setdefault``: threads agree on one object).
    """
    found = _LABEL_ANSWERS.get(index)
    if found is None:
        found = _LABEL_ANSWERS.setdefault(index, Answer(index))
    return found
