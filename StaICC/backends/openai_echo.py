"""The checks on an OpenAI-compatible server's echoed prompt: its tokens must cover the prompt, in order.

A label is scored on the log-probabilities of the echoed tokens after the context; an echo
that skips characters, reorders tokens or reports impossible values would give silently
wrong probabilities, so each is refused here with an error naming the server's URL.
"""
import math
from typing import Any, List

from ..validation import is_int
from .http import APIError


class MissingLogprobsError(APIError):
    """The server's answer lacks what log-probability scoring needs."""


#: the largest log-probability accepted: 0 plus float rounding noise; anything above is impossible
MAX_LOGPROB = 1e-6


def _check_coverage(where: str, tokens: List[Any], offsets: List[Any], text: str, hint: str) -> int:
    """How many echoed tokens are the prompt's, once they are shown to cover all of it, in order.

    A partial echo would score a label on tokens that are not the label's (silently uniform or
    wrong probabilities), so: offsets are integers in order, the prompt's tokens (offset before
    the prompt's end) are strings that leave no uncovered character but whitespace between
    them (some servers trim a token's leading space from its offset), the last of them reaches
    the prompt's end, and at most one token (the one ``max_tokens=1`` generated) follows.
    """
    if not all(is_int(o) and o >= 0 for o in offsets):
        raise MissingLogprobsError(f"{where} returned text offsets that are not character positions." + hint)
    if any(b < a for a, b in zip(offsets, offsets[1:])):
        raise MissingLogprobsError(f"{where} returned text offsets out of order; the echoed tokens do not "
                                   "follow the prompt")
    count = sum(1 for offset in offsets if offset < len(text))
    if not count:
        raise MissingLogprobsError(f"{where} returned no log-probability for the prompt's tokens." + hint)
    if len(offsets) - count > 1:
        raise MissingLogprobsError(f"{where} returned {len(offsets) - count} tokens after the prompt's end; "
                                   "max_tokens=1 generates one: the offsets do not fit the prompt." + hint)
    if not all(isinstance(token, str) for token in tokens[:count]):
        raise MissingLogprobsError(f"{where} returned echoed tokens that are not strings." + hint)
    if sum(1 for token in tokens if isinstance(token, str) and token) > 1 and not any(offsets):
        # every token at offset 0 places none of them: the label's tokens cannot be told from the context's
        raise MissingLogprobsError(f"{where} returned every echoed token at text offset 0; the offsets do not "
                                   "place the tokens in the prompt, so the label's log-probability cannot be read."
                                   + hint)
    covered = 0
    for token, offset in zip(tokens[:count], offsets[:count]):
        if text[covered:offset].strip():
            raise MissingLogprobsError(f"{where} returned log-probabilities that skip characters {covered}.."
                                       f"{offset} of the prompt; the echoed tokens must cover all of it." + hint)
        covered = max(covered, offset + len(token))
    if text[covered:].strip():
        raise MissingLogprobsError(f"{where} returned log-probabilities covering only the first {covered} of "
                                   f"the prompt's {len(text)} characters; the label's tokens are missing")
    return count


def _finite(value: Any) -> bool:
    """Whether a number is finite as a float (an integer of thousands of digits is not: it cannot be one)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _token_end(offsets: List[int], k: int, length: int) -> int:
    return offsets[k + 1] if k + 1 < len(offsets) else length
