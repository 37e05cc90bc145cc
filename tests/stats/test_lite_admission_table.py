"""The lite run prints what the committed coverage study admits, no more and no less.

``benchmarks/results/lite_coverage.txt`` is the raw output of the admission study; it ends with
the ``ESTIMABLE`` table that study finds.  The package's table must be that one: a metric printed
without the study behind it, or one the study admits left unprinted, fails here.
"""
import ast
from pathlib import Path

from StaICC.stats.lite import ESTIMABLE

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
STUDY = RESULTS / "lite_coverage.txt"
#: sub-benchmark -> the later study of it alone (``--benchmarks``), whose rows replace the admission study's
LATER = {"Post_bias": RESULTS / "lite_coverage_post_bias.txt"}


def _table_of(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    start = text.index("ESTIMABLE = {") + len("ESTIMABLE = ")
    return ast.literal_eval(text[start:text.index("}", start) + 1])


def _study_table() -> dict:
    table = _table_of(STUDY)
    for benchmark, path in LATER.items():
        later = _table_of(path)
        assert all(key[0] == benchmark for key in later), path  # a study of that sub-benchmark alone
        table = {**{k: v for k, v in table.items() if k[0] != benchmark}, **later}
    return table


def test_the_package_prints_what_the_committed_study_admits():
    assert _study_table() == ESTIMABLE


def _admitted_rows() -> set:
    """(sub-benchmark, metric) of the study's rows marked 'yes': the metric's words run up to the count ``n``."""
    admitted = set()
    for path in (STUDY, *LATER.values()):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if line.startswith("  0.") and words[-1] == "yes" and (path != STUDY or words[1] not in LATER):
                count_at = next(i for i in range(3, len(words)) if words[i].isdigit())
                admitted.add((words[1], " ".join(words[2:count_at])))
    return admitted


def test_the_study_admits_by_the_stated_rule():
    """Every admitted cell is a row of the study's table marked 'yes'."""
    admitted = _admitted_rows()
    for benchmark, metric, kind in ESTIMABLE:
        assert (benchmark, metric + (" (averaged)" if kind == "averaged" else "")) in admitted, (benchmark, metric)
