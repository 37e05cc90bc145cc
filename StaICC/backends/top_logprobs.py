"""``scoring=top_logprobs``: label probabilities as sound intervals from a server's top-k answer tokens.

A chat API returns, for each generated token, only the ``k`` most likely tokens and their
log-probabilities (OpenAI allows k <= 20), never a chosen label's score.  This module asks
for the first answer token's top-k list and turns it into a *box* per request:

* A vocabulary token *names* label L when its text, stripped of surrounding whitespace and
  case-folded, is a non-empty prefix of L's text (stripped, case-folded) and of no other
  label's.  The **exact score** of L is the total probability of the tokens naming it: the
  probability that the answer's first token starts L and only L.
* ``lo[L]`` is the sum of the *listed* tokens naming L: a lower bound of its exact score.
* ``rest`` is the mass the list leaves out, ``1 - sum(listed)`` (plus :data:`ROUNDING` for the
  server's float32 softmax): the unlisted tokens naming any label hold at most that *together*.
  So ``lo[L] <= score[L] <= lo[L] + rest`` and ``sum_L (score[L] - lo[L]) <= rest``.
  A label is *listed* when a listed token names it; its score is then known down to ``rest``.
* The per-token bound ``[0, p_k]`` for an absent label (p_k the smallest listed
  probability) holds only for a label with one vocabulary token; a label is named by many
  (case, leading space, prefixes: "pos", "Positive", " positive"), so the bound used is the
  total-mass one, which holds for any vocabulary.
* The label probabilities are the scores renormalised over the labels, as the standard does;
  their intervals: ``lo[L] / (sum lo + rest) <= q[L] <= (lo[L] + rest) / (sum lo + rest)``.
* The **point value** (the prediction the run records and the standard table shows) spreads
  ``rest`` evenly over the labels: ``(lo[L] + rest / n) / (sum lo + rest)``; it is inside the
  interval by construction.

The server's list is the raw answer: it is kept as the answer's text (JSON), so the cache,
the samples file and an export hold the evidence and the box is recomputed from it
(:func:`box_of_text`).  A malformed list (duplicated tokens, a log-probability above 0,
NaN, fewer entries than asked, more than all the mass) is refused with one line naming the
answer: never a silent number.  Every bad list of a call is collected (:class:`BadTopLists`, one
line each): the runner keeps the call's good answers, asks on, and refuses the run at its end
with every line.  A completions server's ``top_logprobs`` is a JSON object keyed by token, so
a token listed twice is seen only because the client parses objects keeping duplicated keys
(:func:`StaICC.backends.http.object_pairs`).
"""
import json
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..requests import Answer, Request
from ..validation import is_real
from .base import BadAnswersError
from .openai_echo import MAX_LOGPROB, MissingLogprobsError, _finite

#: the most entries OpenAI returns; the default k
DEFAULT_K = 20
#: added to the unlisted mass: a server's float32 softmax sums to 1 within this
ROUNDING = 1e-5
#: the text marker of a kept top-k list
TEXT_KEY = "top_logprobs"


@dataclass(frozen=True)
class LabelBox:
    """One answer's bounds: ``lo`` (listed mass naming each label), ``rest`` (the unlisted mass)."""

    lo: Tuple[float, ...]
    rest: float

    def probability_bounds(self) -> List[Tuple[float, float]]:
        """Each label's renormalised probability interval (``[0, 1]`` where nothing is known)."""
        total = math.fsum(self.lo) + self.rest
        if total <= 0:
            return [(0.0, 1.0)] * len(self.lo)
        return [(v / total, min(1.0, (v + self.rest) / total)) for v in self.lo]

    def point(self) -> List[float]:
        """The stated convention: ``rest`` spread evenly over the labels, renormalised."""
        n = len(self.lo)
        total = math.fsum(self.lo) + self.rest
        if total <= 0:
            return [1.0 / n] * n
        return [(v + self.rest / n) / total for v in self.lo]

    def listed(self) -> List[bool]:
        """Whether a listed token names each label (its score's lower bound is positive)."""
        return [v > 0 for v in self.lo]


def normal_text(text: str) -> str:
    return text.strip().casefold()


def naming_label(token: str, labels: Sequence[str]) -> Optional[int]:
    """The one label whose normalised text the token's normalised text begins, or None (none, or several)."""
    piece = normal_text(token)
    if not piece:
        return None
    found = [i for i, label in enumerate(labels) if normal_text(label).startswith(piece)]
    return found[0] if len(found) == 1 else None


def box_of(entries: Sequence[Tuple[str, float]], labels: Sequence[str]) -> LabelBox:
    """The box of a checked top-k list (``(token, log-probability)`` pairs)."""
    lo = [0.0] * len(labels)
    listed = []
    for token, logprob in entries:
        p = math.exp(min(logprob, 0.0))
        listed.append(p)
        i = naming_label(token, labels)
        if i is not None:
            lo[i] += p
    rest = min(1.0, max(0.0, 1.0 - math.fsum(listed)) + ROUNDING)
    return LabelBox(tuple(lo), rest)


def check_request(request: Request) -> None:
    """Refuse a noisy-channel request (one prompt per label): the mode reads one answer to one prompt."""
    if request.noisy_channel:
        raise InvalidValueError("scoring=top_logprobs cannot answer noisy-channel prompts (one prompt per label): it reads "
                                "the answer token of one prompt; use scoring=sequence or first_token for the noisy channel")


def identity_part(k: int, chat: bool, system: Optional[str], message_builder: Any) -> Dict[str, Any]:
    """What changes the answers of this mode beyond the model: k, and the messages the prompt is sent as."""
    part: Dict[str, Any] = {"top_logprobs": k, "chat": chat, "system": system}
    if message_builder is not None:
        from .base import code_digest, function_name
        part["message_builder"] = {"function": function_name(message_builder),
                                   "code_sha256": code_digest(message_builder)}
    return part


def request_body(base: Dict[str, Any], chat: bool, k: int) -> Dict[str, Any]:
    """A generation body asking for one token and its top-k list."""
    body = dict(base, max_tokens=1, temperature=0)
    body.pop("stop", None)
    if chat:
        body.update(logprobs=True, top_logprobs=k)
    else:
        body["logprobs"] = k
    return body


def entries_of(response: Any, chat: bool) -> List[Tuple[str, Any]]:
    """The raw (token, log-probability) pairs of the first generated token, unchecked."""
    choice = response["choices"][0]
    if chat:
        first = choice["logprobs"]["content"][0]
        return [(item["token"], item["logprob"]) for item in first["top_logprobs"]]
    table = choice["logprobs"]["top_logprobs"][0]
    if isinstance(table, dict):  # every (token, value) pair, a duplicated key included (http.object_pairs)
        return list(getattr(table, "pairs", table.items()))
    return [(item["token"], item["logprob"]) for item in table]


def checked_entries(response: Any, chat: bool, k: int, where: str) -> List[Tuple[str, float]]:
    """The top-k list of a response, every entry checked; a bad list raises one line saying what is wrong."""
    try:
        entries = entries_of(response, chat)
    except (KeyError, IndexError, TypeError):
        path = "choices[0].logprobs.content[0].top_logprobs" if chat else "choices[0].logprobs.top_logprobs[0]"
        raise MissingLogprobsError(f"{where} returned no top-k list at {path}; scoring=top_logprobs needs a server "
                                   "that returns top_logprobs") from None
    if len(entries) < k:
        raise MissingLogprobsError(f"{where} returned {len(entries)} top log-probabilities, {k} were asked "
                                   f"(top_logprobs={k}); give the k the server allows")
    seen = set()
    out = []
    for token, value in entries:
        if not isinstance(token, str):
            raise MissingLogprobsError(f"{where} returned a top-k token that is not a string: {repr(token)[:40]}")
        if token in seen:
            raise MissingLogprobsError(f"{where} returned the token {token!r:.40} twice in one top-k list")
        seen.add(token)
        if not is_real(value) or not _finite(value) \
                or value > MAX_LOGPROB:
            raise MissingLogprobsError(f"{where} returned the impossible log-probability {repr(value)[:40]} for "
                                       f"the token {token!r:.40} (a log-probability is finite and <= 0)")
        out.append((token, float(value)))
    mass = math.fsum(math.exp(min(v, 0.0)) for _, v in out)
    if mass > 1.0 + ROUNDING:
        raise MissingLogprobsError(f"{where} returned top-k probabilities summing to {mass:.6f}, over 1")
    return out


def answer_of(entries: Sequence[Tuple[str, float]], request: Request) -> Answer:
    """The answer: the point row, with the list kept as its text (the evidence the bounds are computed from)."""
    box = box_of(entries, request.label_space)
    text = json.dumps({TEXT_KEY: [[t, v] for t, v in entries], "lo": list(box.lo), "rest": box.rest},
                      ensure_ascii=False, separators=(",", ":"))
    return Answer(box.point(), text=text, parsed=True)


def box_of_text(text: Any) -> Optional[LabelBox]:
    """The box kept in an answer's text by :func:`answer_of` (so a record needs no label words); None for any
    other text."""
    if not isinstance(text, str) or not text.startswith('{"' + TEXT_KEY):
        return None
    try:
        kept = json.loads(text)
        lo, rest = tuple(float(v) for v in kept["lo"]), float(kept["rest"])
    except (ValueError, TypeError, KeyError):
        return None
    if not all(math.isfinite(v) and v >= 0 for v in lo + (rest,)):
        return None
    return LabelBox(lo, rest)


def bad_answer_line(request: Request, error: BaseException) -> str:
    """One line naming the answer a bad list came with."""
    return f"dataset {request.dataset!r}, query {request.query_index}, pass {request.pass_index}: {error}"


class BadTopLists(BadAnswersError, MissingLogprobsError):
    """The malformed top-k lists of one call, one line each (dataset, query, pass and what is wrong)."""


def answer_or_line(ask: Any, request: Request) -> Any:
    """``ask(request)``'s answer, or the one line (a str) saying why its top-k list is refused."""
    try:
        return ask(request)
    except MissingLogprobsError as exc:
        return str(exc)


def answers_or_refusal(results: Sequence[Any]) -> List[Answer]:
    """The call's answers, or :class:`BadTopLists` carrying every bad answer's line (the str results) and the
    good answers."""
    lines = [r for r in results if isinstance(r, str)]
    if lines:
        raise BadTopLists(lines, [None if isinstance(r, str) else r for r in results])
    return list(results)
