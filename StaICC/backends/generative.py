"""Generative classification: a model's free-text answer -> a label index.

Chat and API models answer with text ("Positive.", "The answer is negative").  This
module turns that text into a prediction with a documented parser, builds chat
messages from a request, and applies the policy for answers that name no label.

The parser's rule (:class:`LabelParser`):

1. Text and phrases are normalised: Unicode NFKC, case-folded, and cut into *words*:
   maximal runs of letters and digits; every other character (spaces, newlines,
   punctuation, symbols) separates words.  A CJK ideograph or kana is a word of its
   own, since those scripts write no spaces.
2. Each label, and each of its aliases, is a phrase: a sequence of words.  A phrase
   matches where its words occur consecutively in the text's words; so "pos" never
   matches inside "positive", and "Positive." matches "positive".
3. The first match wins: the match that starts at the earliest word of the text; at
   the same word, the phrase with the most words (then the most characters) wins, so
   "not entailment" beats "entailment" in "not entailment".
4. No match: the answer is *unparsed*; the backend's ``unparsed`` policy decides.

Predictions are one-hot float vectors (the label the text names gets 1.0), so that
parsed and unparsed answers (a uniform vector) have one kind.

Before any of this, a reasoning model's thinking section is cut off the text
(:mod:`StaICC.backends.thinking`): the parser reads only the answer after it, and an
answer whose thinking never ended (or overran its budget) is unparsed.
"""
import json
import unicodedata
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..requests import Answer, Request
from ..errors import InvalidTypeError, InvalidValueError, StaICCError
from .thinking import ThinkingRule, unparsed_reason

#: post-processor hook: (text, label_space) -> label index, or None when the text names no label
PostProcessor = Callable[[str, Sequence[str]], Optional[int]]
#: chat message builder hook: request -> OpenAI-style messages [{"role": ..., "content": ...}]
MessageBuilder = Callable[[Request], List[Dict[str, str]]]
#: answer hook: (request, text, answer) -> the answer to record (an evaluator's last word)
AnswerHook = Callable[[Request, str, Answer], Answer]

UNPARSED_POLICIES = ("uniform", "error", "label:<index>")


class UnparsedAnswerError(StaICCError, ValueError):
    """A generated answer named no label and the policy is ``unparsed=error``."""


def _is_unspaced_script(char: str) -> bool:
    """CJK ideographs, kana and their compatibility forms: scripts written without spaces."""
    code = ord(char)
    return (0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF
            or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x2FFFF)


def words(text: str) -> List[Tuple[str, int]]:
    """The normalised words of ``text`` with their start offsets in the normalised text."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    out: List[Tuple[str, int]] = []
    start = -1
    for i, char in enumerate(normal):
        if char.isalnum() and not _is_unspaced_script(char):
            if start < 0:
                start = i
            continue
        if start >= 0:
            out.append((normal[start:i], start))
            start = -1
        if _is_unspaced_script(char):
            out.append((char, i))
    if start >= 0:
        out.append((normal[start:], start))
    return out


class LabelParser:
    """Maps generated text to a label index by the rule in the module docstring.

    ``aliases`` maps a label (its text) to extra phrases that also name it, e.g.
    ``{"positive": ["great", "pos"]}``.  A phrase that names two labels, or a label
    with no letter or digit, is refused at construction.
    """

    def __init__(self, label_space: Sequence[str], aliases: Optional[Dict[str, Sequence[str]]] = None) -> None:
        if isinstance(label_space, str) or not label_space or not all(isinstance(l, str) for l in label_space):
            raise InvalidValueError(f"LabelParser: label_space must be a non-empty list of strings, got {label_space!r}")
        self.label_space = tuple(label_space)
        aliases = dict(aliases or {})
        unknown = [name for name in aliases if name not in self.label_space]
        if unknown:
            raise InvalidValueError(f"LabelParser: aliases name labels {unknown} that are not in the label space "
                                    f"{list(self.label_space)}")
        self._phrases: Dict[str, List[Tuple[Tuple[str, ...], int, int]]] = {}  # first word -> phrases
        owner: Dict[Tuple[str, ...], int] = {}
        for index, label in enumerate(self.label_space):
            for phrase in [label, *aliases.get(label, ())]:
                if not isinstance(phrase, str):
                    raise InvalidValueError(f"LabelParser: alias {phrase!r} of label {label!r} must be a string")
                key = tuple(w for w, _ in words(phrase))
                if not key:
                    raise InvalidValueError(f"LabelParser: {phrase!r} (label {label!r}) has no letter or digit, so no "
                                            "text can name it; give an alias or a post-processor")
                if owner.get(key, index) != index:
                    raise InvalidValueError(f"LabelParser: {phrase!r} names both {self.label_space[owner[key]]!r} and "
                                            f"{label!r}; phrases must name one label")
                if key in owner:
                    continue
                owner[key] = index
                self._phrases.setdefault(key[0], []).append((key, index, len(" ".join(key))))
        for candidates in self._phrases.values():  # longest first: the tie rule of step 3
            candidates.sort(key=lambda c: (-len(c[0]), -c[2]))

    def __call__(self, text: Optional[str], label_space: Optional[Sequence[str]] = None) -> Optional[int]:
        if label_space is not None and tuple(label_space) != self.label_space:
            raise InvalidValueError(f"LabelParser: built for {list(self.label_space)}, called with {list(label_space)}")
        return self.parse(text)

    def parse(self, text: Optional[str]) -> Optional[int]:
        """The label index the text names first, or None."""
        if not text:
            return None
        tokens = [w for w, _ in words(text)]
        for start, word in enumerate(tokens):
            for key, index, _ in self._phrases.get(word, ()):
                if tuple(tokens[start:start + len(key)]) == key:
                    return index
        return None


def parse_label(text: Optional[str], label_space: Sequence[str],
                aliases: Optional[Dict[str, Sequence[str]]] = None) -> Optional[int]:
    """One-off :class:`LabelParser` call: the index of the label ``text`` names first, or None."""
    return LabelParser(label_space, aliases).parse(text)


def one_hot(index: int, count: int) -> List[float]:
    return [1.0 if c == index else 0.0 for c in range(count)]


def check_unparsed_policy(value: Any) -> str:
    """``uniform``, ``error`` or ``label:<i>`` (i a non-negative int); an error names the argument."""
    if isinstance(value, str):
        text = value.strip()
        if text in ("uniform", "error"):
            return text
        if text.startswith("label:") and text[6:].isdigit():
            return f"label:{int(text[6:])}"
    raise InvalidValueError(f"model argument unparsed must be one of {', '.join(UNPARSED_POLICIES)}, got {value!r}")


def parse_aliases(value: Any) -> Dict[str, Tuple[str, ...]]:
    """Aliases from a dict, a JSON object, or ``"positive:great|good;negative:bad"``."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except ValueError as error:
                raise InvalidValueError(f"model argument aliases is not valid JSON: {error}") from None
        else:
            value = {}
            for part in text.split(";"):
                if not part.strip():
                    continue
                label, sep, phrases = part.partition(":")
                if not sep or not label.strip():
                    raise InvalidValueError(f"model argument aliases: {part!r} is not label:alias|alias")
                value[label.strip()] = [p.strip() for p in phrases.split("|") if p.strip()]
    if not isinstance(value, dict):
        raise InvalidValueError(f"model argument aliases must map labels to lists of phrases, got {type(value).__name__}")
    out: Dict[str, Tuple[str, ...]] = {}
    for label, phrases in value.items():
        if isinstance(phrases, str):
            phrases = [phrases]
        if not isinstance(label, str) or not all(isinstance(p, str) for p in phrases):
            raise InvalidValueError(f"model argument aliases: label {label!r} must map to strings, got {phrases!r}")
        out[label] = tuple(phrases)
    return out


def default_messages(request: Request, system: Optional[str] = None) -> List[Dict[str, str]]:
    """The default chat builder: an optional system message, then the whole prompt as one user turn."""
    if request.noisy_channel:
        raise InvalidValueError("generative scoring cannot answer noisy-channel prompts (one prompt per label); "
                                "use a log-probability scoring mode")
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": request.prompt})
    return messages


def multiturn_messages(request: Request, system: Optional[str] = None) -> List[Dict[str, str]]:
    """Demonstrations as chat turns (lm-eval's ``fewshot_as_multiturn``): the instruction joins
    the system message, each demonstration is a user turn (its input part) and an assistant
    turn (its label part), the query part is the last user turn; every turn is stripped of
    surrounding whitespace, as a chat template separates turns itself."""
    segments = request.segments
    if request.noisy_channel:
        raise InvalidValueError("fewshot_as_multiturn cannot split noisy-channel prompts (one prompt per label); "
                                "use fewshot_as_multiturn=false")
    if segments is None or len(segments) % 2:
        raise InvalidValueError("fewshot_as_multiturn needs requests carrying their segments (instruction, "
                                "demonstrations, query), as the run writes them for this backend")
    head = "\n\n".join(text for text in (system, segments[0].strip()) if text)
    messages = [{"role": "system", "content": head}] if head else []
    for start in range(1, len(segments) - 1, 2):
        messages.append({"role": "user", "content": segments[start].strip()})
        messages.append({"role": "assistant", "content": segments[start + 1].strip()})
    messages.append({"role": "user", "content": segments[-1].strip()})
    return messages


def answer_instruction(label_space: Sequence[str]) -> str:
    """A system message asking for one label (used with ``system=labels``)."""
    return "Answer with exactly one of: " + ", ".join(label_space) + "."


class AnswerMapper:
    """Generated text -> :class:`Answer`: the thinking rule, the parser (or a user post-processor), the
    unparsed policy, a hook.

    ``thinking`` cuts a reasoning model's thinking section off first
    (:class:`~StaICC.backends.thinking.ThinkingRule`).  ``postprocess(text, label_space)``
    replaces the parser when given (it reads the answer after the thinking section); it
    returns a label index or None.  ``answer_hook(request, text, answer)`` sees every answer
    last, with the whole text, and may replace it (an evaluator's own rule).
    """

    def __init__(self, unparsed: str = "uniform", aliases: Optional[Dict[str, Sequence[str]]] = None,
                 postprocess: Optional[PostProcessor] = None, answer_hook: Optional[AnswerHook] = None,
                 thinking: Optional[ThinkingRule] = None) -> None:
        self.thinking = thinking if thinking is not None else ThinkingRule()
        self.unparsed = check_unparsed_policy(unparsed)
        self.aliases = parse_aliases(aliases)
        for name, hook in (("postprocess", postprocess), ("answer_hook", answer_hook)):
            if hook is not None and not callable(hook):
                raise InvalidTypeError(f"model argument {name} must be callable, got {type(hook).__name__}")
        self.postprocess = postprocess
        self.answer_hook = answer_hook
        self._parsers: Dict[Tuple[str, ...], LabelParser] = {}

    def identity(self) -> Dict[str, Any]:
        from .base import code_digest, function_name
        out: Dict[str, Any] = {"unparsed": self.unparsed, "aliases": {k: list(v) for k, v in sorted(self.aliases.items())},
                               "thinking": self.thinking.identity()}
        for name, hook in (("postprocess", self.postprocess), ("answer_hook", self.answer_hook)):
            if hook is not None:
                out[name] = {"function": function_name(hook), "code_sha256": code_digest(hook)}
        return out

    def index_of(self, text: str, label_space: Tuple[str, ...]) -> Optional[int]:
        if self.postprocess is not None:
            index = self.postprocess(text, list(label_space))
            if index is not None and (isinstance(index, bool) or not isinstance(index, int)
                                      or not 0 <= index < len(label_space)):
                raise InvalidValueError(f"the postprocess hook returned {index!r} for {text!r:.80}; expected None or an "
                                        f"int in [0, {len(label_space)})")
            return index
        if label_space not in self._parsers:
            self._parsers[label_space] = LabelParser(label_space, self.aliases)
        return self._parsers[label_space].parse(text)

    def answer(self, request: Request, text: str, thinking_tokens: Optional[int] = None) -> Answer:
        """The answer ``text`` gives; ``thinking_tokens``: the generated tokens of its thinking section,
        where the backend counted them."""
        labels = request.label_space
        split = self.thinking.split(text)
        thinking = self.thinking.measure(split, thinking_tokens)
        reason = unparsed_reason(thinking, self.thinking)
        index = None if reason else self.index_of(split.answer, labels)
        if index is not None:
            result = Answer(one_hot(index, len(labels)), text=text, parsed=True, thinking=thinking)
        elif self.unparsed == "error":
            problem = f"is unparsed: {reason}" if reason else f"names none of the labels {list(labels)}"
            raise UnparsedAnswerError(f"the model's answer {text!r:.200} {problem} (dataset {request.dataset!r}, "
                                      f"query {request.query_index}); use unparsed=uniform or unparsed=label:<i>, "
                                      "aliases, or a postprocess hook")
        else:
            result = Answer(self._fallback(request), text=text, parsed=False, thinking=thinking)
        if self.answer_hook is not None:
            result = self.answer_hook(request, text, result)
            if not isinstance(result, Answer):
                raise InvalidTypeError(f"the answer_hook returned {type(result).__name__}; expected an Answer")
        return result

    def _fallback(self, request: Request) -> List[float]:
        """The prediction the unparsed policy gives (uniform, or one label)."""
        labels = request.label_space
        if self.unparsed == "uniform":
            return [1.0 / len(labels)] * len(labels)
        fallback = int(self.unparsed[6:])
        if fallback >= len(labels):
            raise InvalidValueError(f"unparsed={self.unparsed} but the label space of dataset {request.dataset!r} has "
                                    f"{len(labels)} labels")
        return one_hot(fallback, len(labels))


def generation_identity(mapper: AnswerMapper, message_builder: Optional[MessageBuilder],
                        **settings: Any) -> Dict[str, Any]:
    """What changes a generative backend's answers, for its identity (and so its cache key).

    The backend's own ``settings`` (token limit, chat, system message...), then the
    mapper's parsing rules and hooks, then the message builder by name and code digest.
    """
    from .base import code_digest, function_name
    identity: Dict[str, Any] = dict(settings)
    identity.update(mapper.identity())
    if message_builder is not None:
        identity["message_builder"] = {"function": function_name(message_builder),
                                       "code_sha256": code_digest(message_builder)}
    return identity


class ScoringModes:
    """What the hf, vllm and openai backends share over their scoring modes.

    The backend sets ``scoring``, ``chat``, ``system``, ``mapper`` and ``message_builder``;
    ``STANDARD_SCORING`` is the mode whose numbers are the standard's (None: no mode of this
    backend can compute them).  Listed before :class:`~StaICC.backends.base.Backend` in the bases.
    """

    STANDARD_SCORING: Optional[str] = "last_token"

    @property
    def prediction_kind(self) -> Optional[str]:
        """A log-probability mode's rows are a softmax computed in floating point ("probabilities": the
        exact-sum rule's softmax branch always); generated answers are labels (the standard's rule)."""
        return None if self.scoring == "generate" else "probabilities"  # type: ignore[attr-defined]

    @property
    def reproducible_rows(self) -> bool:
        """Generated answers become exact rows (one-hot, or the unparsed policy's): no rounding decides their check."""
        return self.scoring == "generate"  # type: ignore[attr-defined]

    @property
    def non_standard(self) -> List[str]:
        departures = scoring_departures(self.scoring, self.chat, standard=self.STANDARD_SCORING)  # type: ignore[attr-defined]
        return departures + self.mapper.thinking.departures()  # type: ignore[attr-defined]

    def generation_limit(self, answer_tokens: int) -> int:
        """Tokens a generation may take: the answer's limit, plus the thinking budget when one is set."""
        return answer_tokens + self.mapper.thinking.extra_tokens()  # type: ignore[attr-defined]

    def with_generation_identity(self, identity: Dict[str, Any], **limits: Any) -> Dict[str, Any]:
        """``identity`` plus, when the backend generates, what changes its generated answers."""
        if self.scoring == "generate":  # type: ignore[attr-defined]
            identity.update(generation_identity(self.mapper, self.message_builder, **limits,  # type: ignore[attr-defined]
                                                chat=self.chat, system=self.system))  # type: ignore[attr-defined]
        return identity


def scoring_departures(scoring: str, chat: bool, standard: Optional[str] = "last_token") -> List[str]:
    """A backend's settings that depart from the standard: every scoring but ``standard``, and chat templates.

    ``standard=None`` for a backend that cannot compute the standard scoring.
    """
    if scoring == "generate":
        return ["generative answers (scoring=generate)"] + (["chat template (chat=true)"] if chat else [])
    return [] if scoring == standard else [f"scoring={scoring}"]
