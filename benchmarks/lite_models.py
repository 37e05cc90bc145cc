"""Function models of the lite-run coverage study: awkward rows, and synthetic models with a known defect.

Every model is a plain ``f(prompt, label_space) -> row``, deterministic in the prompt (a
SHA-256 of it seeds whatever is random), so a full run is reproducible and a lite run's
records are exactly its records on the subset.  The synthetic models start from the built-in
lexical model (the proxy of the proxy-assisted estimates), so they correlate with it as a
related real model would, and then add one defect each: a bias towards label 0, label noise
(30 % of answers moved to another label), over-confidence (rows sharpened, so the ECE is
large), and random rows of several seeds (no relation to the proxy).
"""
import hashlib
import math
from typing import Any, Callable, Dict, List

from StaICC.backends.reference_model import lexical_icl


def _digest(prompt: Any, salt: str = "") -> bytes:
    text = prompt if isinstance(prompt, str) else "\x1f".join(prompt)
    return hashlib.sha256((salt + "\x1e" + text).encode("utf-8")).digest()


def always_zero(prompt: Any, label_space: List[str]) -> List[float]:  # noqa: ARG001 (a model's signature)
    """Always label 0, with certainty: accuracy is label 0's share; every row the same."""
    return [1.0] + [0.0] * (len(label_space) - 1)


def near_ties(prompt: Any, label_space: List[str]) -> List[float]:
    """Scores that tie to 1e-12, the winner chosen by the prompt: argmax flips on a last bit."""
    n = len(label_space)
    row = [0.5] * n
    row[_digest(prompt)[0] % n] += 1e-12
    return row


def exact_sum(prompt: Any, label_space: List[str]) -> List[float]:
    """Dyadic probabilities summing to exactly 1.0 (the standard keeps them unsoftmaxed): 3/4 on a label
    chosen by the prompt, then 1/8, 1/16, ... on the others, the last taking what is left."""
    n = len(label_space)
    top = _digest(prompt)[0] % n
    row = [0.0] * n
    row[top] = 0.75
    rest = [j for j in range(n) if j != top]
    share = 0.25
    for j in rest[:-1]:
        share /= 2
        row[j] = share
    row[rest[-1]] = share if len(rest) > 1 else 0.25
    return row


def biased(prompt: Any, label_space: List[str]) -> List[float]:
    """The lexical model's log-probabilities with +1.5 on label 0: a known contextual bias."""
    row = [math.log(max(p, 1e-12)) for p in lexical_icl(prompt, label_space)]
    row[0] += 1.5
    return row


def label_noise(prompt: Any, label_space: List[str]) -> List[float]:
    """The lexical model, with 30 % of the prompts' rows rotated by one label (the answer moved elsewhere)."""
    row = lexical_icl(prompt, label_space)
    return row[1:] + row[:1] if _digest(prompt, "noise")[0] < 77 else row


def overconfident(prompt: Any, label_space: List[str]) -> List[float]:
    """The lexical model's log-probabilities times 6: the same answers, far too sure of them (miscalibrated)."""
    return [6 * math.log(max(p, 1e-12)) for p in lexical_icl(prompt, label_space)]


def random_model(seed: int) -> Callable[[Any, List[str]], List[float]]:
    """Scores uniform in [-2, 2] from the prompt's SHA-256 with ``seed``: unrelated to the proxy."""
    def scores(prompt: Any, label_space: List[str]) -> List[float]:
        digest = _digest(prompt, f"random {seed}")
        return [(digest[j % 32] / 255.0) * 4 - 2 for j in range(len(label_space))]
    return scores


FUNCTIONS: Dict[str, Callable[[Any, List[str]], List[float]]] = {
    "always-0": always_zero, "near-ties": near_ties, "exact-sum": exact_sum, "biased": biased,
    "label-noise": label_noise, "overconfident": overconfident,
    **{f"random-{seed}": random_model(seed) for seed in (1, 2, 3)}}
