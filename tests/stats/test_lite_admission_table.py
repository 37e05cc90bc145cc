"""The lite run prints what the committed coverage study admits, no more and no less.

``benchmarks/results/lite_coverage.txt`` is the raw output of the admission study; it ends with
the ``ESTIMABLE`` table that study finds (a follow-up study of some sub-benchmarks, :data:`FOLLOW_UPS` and
:data:`CONSISTENCIES`, replaces its cells for those).  The package's table must be that one: a metric printed
without the study behind it, or one the study admits left unprinted, fails here.
"""
import ast
from pathlib import Path

from StaICC.stats.lite import ESTIMABLE

STUDY = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "lite_coverage.txt"


#: later studies of some sub-benchmarks only (``--benchmarks``, same models, subsets and resamples): each one's table
#: and rows replace the admission study's for the sub-benchmarks it ran (its first line names them)
FOLLOW_UPS = (STUDY.parent / "lite_coverage_ece.txt", STUDY.parent / "lite_coverage_post_bias.txt",
              STUDY.parent / "lite_coverage_gler.txt", STUDY.parent / "lite_coverage_bias.txt")


def _table_of(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    start = text.index("ESTIMABLE = {") + len("ESTIMABLE = ")
    return ast.literal_eval(text[start:text.index("}", start) + 1])


def _covered_by(path: Path) -> set:
    """The sub-benchmarks a follow-up study ran: ``sub-benchmarks A,B;`` on its first line."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    return set(first.split("sub-benchmarks ", 1)[1].split(";", 1)[0].split(","))


#: the study of the other fractions (6.25 % and 25 %, the same models, subsets and resamples; with today's rules, its
#: plain rows beside the proxies' tables): a cell is admitted at a fraction only if it meets the rule there and at
#: every larger studied fraction, so a cell it finds failing at 25 % is not admitted at 12.5 % either
LARGER_FRACTIONS = STUDY.parent / "lite_coverage_proxies_200_fractions_bounds.txt"


def _failing_cells(path: Path) -> dict:
    """(sub-benchmark, metric, row) -> the fractions at which a study's row misses 95 % over all models or 90 % for
    its worst model (read from its coverage columns, not its own 'estimable' column)."""
    failing: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if not line.startswith("  0.") or words[-1] not in ("yes", "no"):  # a proxy's side-by-side row: not these
            continue
        count_at = next(i for i in range(3, len(words)) if words[i].isdigit())
        metric = " ".join(words[2:count_at])
        overall, worst = float(words[count_at + 3].rstrip("%")), float(words[-2].strip("()%"))
        if overall < 95 or worst < 90:
            averaged = metric.endswith(" (averaged)")
            key = (words[1], metric.replace(" (averaged)", ""), "averaged" if averaged else "dataset")
            failing.setdefault(key, []).append(float(words[0]))
    return failing


#: the study of the consistencies with their averaged rows' pooled exact interval, at every studied fraction (the
#: same models, subsets and resamples): its table and rows replace the older studies' for the sub-benchmarks it ran
#: (its first line names them), and its rows at 6.25 and 25 % replace the study of the other fractions' for them
CONSISTENCIES = STUDY.parent / "lite_coverage_template.txt"
#: the least fraction a cell is printed at: the admission study's, run with every model (a later study's rows at
#: 6.25 % can keep a cell out, never print one below this)
TABLE_STARTS = 0.125


def _study_table() -> dict:
    table = _table_of(STUDY)
    for later in (*FOLLOW_UPS, CONSISTENCIES):
        covered = _covered_by(later)
        table = {**{k: v for k, v in table.items() if k[0] not in covered}, **_table_of(later)}
    covered = _covered_by(CONSISTENCIES)
    failing = {**{k: v for k, v in _failing_cells(LARGER_FRACTIONS).items() if k[0] not in covered},
               **_failing_cells(CONSISTENCIES)}
    table = {k: max(v, TABLE_STARTS) for k, v in table.items()}
    return {k: v for k, v in table.items() if not any(f >= v for f in failing.get(k, ()))}


def test_the_package_prints_what_the_committed_study_admits():
    assert _study_table() == ESTIMABLE


def _rows_of(path: Path) -> set:
    """(sub-benchmark, metric) of a study's rows marked 'yes': the metric's words run up to the count ``n``."""
    admitted = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if line.startswith("  0.") and words[-1] == "yes":
            count_at = next(i for i in range(3, len(words)) if words[i].isdigit())
            admitted.add((words[1], " ".join(words[2:count_at])))
    return admitted


def _admitted_rows() -> set:
    """The admission study's rows marked 'yes', those of a follow-up's sub-benchmarks replaced by its rows."""
    admitted = _rows_of(STUDY)
    for later in (*FOLLOW_UPS, CONSISTENCIES):
        covered = _covered_by(later)
        admitted = {row for row in admitted if row[0] not in covered} | _rows_of(later)
    return admitted


def test_the_study_admits_by_the_stated_rule():
    """Every admitted cell is a row of the study's table marked 'yes'."""
    admitted = _admitted_rows()
    for benchmark, metric, kind in ESTIMABLE:
        assert (benchmark, metric + (" (averaged)" if kind == "averaged" else "")) in admitted, (benchmark, metric)
