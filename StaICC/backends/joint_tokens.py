"""Prompt + label tokenized together and split where the label starts (first_token / sequence scoring).

Tokenizing the label alone would score a token the model never sees after this
prompt: BPE merges a prompt's trailing space into the label (" positive"), so the
split is taken on the joint tokenization, at the first token that covers label text.
"""
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError


@dataclass
class JointSplit:
    """A prompt + label tokenized jointly and split at the character boundary."""

    context: List[int]
    continuation: List[int]


def split_joint(tokenizer: Any, pairs: List[Tuple[str, str]], special_ids: set, where: str) -> List[JointSplit]:
    """Joint tokenization of every (prompt, label) in one tokenizer call, split at the boundary.

    A token that straddles the boundary (the label merged with the prompt's last
    characters) belongs to the continuation, so no label ever scores zero tokens.
    Trailing special tokens (EOS) are dropped.  Slow tokenizers have no offsets:
    the boundary is then the common prefix with the prompt tokenized alone.
    """
    for _, label in pairs:
        if label == "":
            raise InvalidValueError(f"{where}: an empty label cannot be scored as a continuation")
    texts = [prompt + label for prompt, label in pairs]
    if getattr(tokenizer, "is_fast", False):
        encoded = tokenizer(texts, return_offsets_mapping=True, return_special_tokens_mask=True)
        bounds = [_offset_boundary(offsets, special, len(prompt)) for (prompt, _), offsets, special
                  in zip(pairs, encoded["offset_mapping"], encoded["special_tokens_mask"])]
    else:
        encoded = tokenizer(texts)
        alone = tokenizer([prompt for prompt, _ in pairs])["input_ids"]
        bounds = [_prefix_boundary(list(ids), list(own), special_ids)
                  for ids, own in zip(encoded["input_ids"], alone)]
    splits = []
    for (prompt, label), ids, (boundary, end) in zip(pairs, encoded["input_ids"], bounds):
        if boundary is None or boundary >= end:
            raise InvalidValueError(f"{where}: the label {label!r} adds no token after the prompt "
                                    f"ending {prompt[-30:]!r}; it cannot be scored as a continuation")
        if boundary == 0:
            raise InvalidValueError(f"{where}: the label {label!r} merges with the whole prompt "
                                    f"{prompt[-30:]!r}; no context token is left to condition on")
        splits.append(JointSplit(list(ids[:boundary]), list(ids[boundary:end])))
    return splits


def _offset_boundary(offsets: Sequence[Tuple[int, int]], special: Sequence[int],
                     prompt_length: int) -> Tuple[Optional[int], int]:
    """(first non-special token ending past the prompt, one past the last non-special token)."""
    real = [i for i in range(len(offsets)) if not special[i]]
    boundary = next((i for i in real if offsets[i][1] > prompt_length), None)
    return boundary, (real[-1] + 1 if real else 0)


def _prefix_boundary(joint: List[int], alone: List[int], special_ids: set) -> Tuple[Optional[int], int]:
    """Slow-tokenizer fallback: the common prefix of joint and prompt-alone ids (trailing specials dropped)."""
    while alone and alone[-1] in special_ids:
        alone.pop()
    end = len(joint)
    while end > 0 and joint[end - 1] in special_ids:
        end -= 1
    boundary = 0
    while boundary < min(len(alone), end) and joint[boundary] == alone[boundary]:
        boundary += 1
    return (boundary if boundary < end else None), end
