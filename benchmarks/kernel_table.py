"""The FLOP bound and the table of ``bench_kernel.py``: what each method computed, against what it had to.

The bound counts the multiplied matrices only.  Per token that runs through the
model, every weight matrix but the input embedding (a lookup) is multiplied once:
2 · non-embedding parameters FLOPs.  The output head (hidden × vocabulary) runs
only where logits are taken: 2 · hidden · vocabulary FLOPs per read position.  So

    bound (s) = (2 · P_non-embedding · tokens + 2 · hidden · vocab · read positions) / peak FLOP/s

"× bound" divides a method's wall time by the bound of the work *given*: every
sequence as asked, nothing shared, logits at the read positions only — the fastest
any method without sharing could be.  Below 1.0 is only possible by computing fewer
tokens than given.  "TFLOP/s" is what the method really multiplied (its computed
tokens, and the output head wherever it ran, read or not) per second of wall time.
"""
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from StaICC.metrics import argmax


@dataclass(frozen=True)
class Shape:
    """What the bound needs from the model."""

    nonembedding: int  # parameters outside the input embedding and the output head
    hidden: int
    vocab: int

    def flops(self, tokens: int, logit_positions: int) -> int:
        return 2 * self.nonembedding * tokens + 2 * self.hidden * self.vocab * logit_positions


@dataclass
class Work:
    """One method's counts for one run of its workload."""

    given: int  # tokens of the sequences as asked (one row per sequence, nothing shared)
    reads: int  # positions whose logits were asked for
    computed: Optional[int] = None  # tokens that ran through the model
    logit_positions: Optional[int] = None  # positions where the output head ran


def shape_of(model: Any) -> Shape:
    from StaICC.backends.tree_forward import model_shape
    nonembedding, hidden, _ = model_shape(model)
    return Shape(nonembedding, hidden, int(model.get_output_embeddings().weight.shape[0]))


def measured_peak(torch: Any, device: str, dtype: Any) -> float:
    """FLOP/s of a large square product in the model's dtype on this device: the CPU's reachable peak."""
    n = 1024 if device == "cpu" else 8192
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        a @ b
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best


def print_table(rows: List[Dict[str, Any]], shape: Shape, peak: float) -> None:
    """One line per method; ``rows`` hold name, quantity, count, wall, work and the agreement columns."""
    header = (f"{'method':34} {'quantity':10} {'prompts/s':>9} {'wall s':>8} {'tokens given':>12} "
              f"{'tokens run':>10} {'run/given':>9} {'TFLOP/s':>8} {'bound s':>8} {'x bound':>7} "
              f"{'argmax %':>8} {'max |dp|':>8} {'fp32 argmax %':>13} {'largest batch':>13} {'peak mem':>9} "
              f"{'speed-up':>14}")
    print(header)
    print("-" * len(header))
    for row in rows:
        work: Work = row["work"]
        wall = row["wall"]
        bound = shape.flops(work.given, work.reads) / peak
        ran = work.computed is not None and work.logit_positions is not None
        achieved = f"{shape.flops(work.computed, work.logit_positions) / wall / 1e12:8.3f}" if ran else " " * 8
        print(f"{row['name']:34} {row['quantity']:10} {row['count'] / wall:9.1f} {wall:8.2f} {work.given:12d} "
              f"{work.computed if work.computed is not None else '':>10} "
              f"{_ratio(work):>9} {achieved} {bound:8.3g} {wall / bound:7.2f} "
              f"{row['agree']:>8} {row['diff']:>8} {row['fp32']:>13} {row['largest']:>13} {row['peak']:>9} "
              f"{row['speed']:>14}")


def _ratio(work: Work) -> str:
    return f"{work.computed / work.given:.3f}" if work.computed is not None and work.given else ""


def agreement(rows: List[List[float]], reference: List[List[float]]) -> Tuple[float, float]:
    agree = sum(argmax(a) == argmax(b) for a, b in zip(rows, reference)) / len(rows) * 100
    return agree, max(abs(p - q) for a, b in zip(rows, reference) for p, q in zip(a, b))


def fmt(value: Optional[float], spec: str) -> str:
    return "" if value is None else format(value, spec)


def short(name: str) -> str:
    return {"per-prompt kernel": "kernel", "lm-eval HFLM": "lm-eval", "sequence, unshared rows": "rows",
            "noisy channel, unshared": "unshared", "last_token, one row per prompt": "rows"}.get(name, name)
