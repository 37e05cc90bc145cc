"""The lite run prints what the committed coverage study admits, no more and no less.

``benchmarks/results/lite_coverage.txt`` is the raw output of the admission study; it ends with
the ``ESTIMABLE`` table that study finds.  The package's table must be that one: a metric printed
without the study behind it, or one the study admits left unprinted, fails here.
"""
import ast
from pathlib import Path

from StaICC.stats.lite import ESTIMABLE

STUDY = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "lite_coverage.txt"


def _study_table() -> dict:
    text = STUDY.read_text(encoding="utf-8")
    start = text.index("ESTIMABLE = {") + len("ESTIMABLE = ")
    return ast.literal_eval(text[start:text.index("}", start) + 1])


def test_the_package_prints_what_the_committed_study_admits():
    assert _study_table() == ESTIMABLE


def _admitted_rows() -> set:
    """(sub-benchmark, metric) of the study's rows marked 'yes': the metric's words run up to the count ``n``."""
    admitted = set()
    for line in STUDY.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if line.startswith("  0.") and words[-1] == "yes":
            count_at = next(i for i in range(3, len(words)) if words[i].isdigit())
            admitted.add((words[1], " ".join(words[2:count_at])))
    return admitted


def test_the_study_admits_by_the_stated_rule():
    """Every admitted cell is a row of the study's table marked 'yes'."""
    admitted = _admitted_rows()
    for benchmark, metric, kind in ESTIMABLE:
        assert (benchmark, metric + (" (averaged)" if kind == "averaged" else "")) in admitted, (benchmark, metric)
