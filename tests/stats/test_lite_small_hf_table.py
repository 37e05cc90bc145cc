"""A second size of random HF model in the coverage study: the committed run of the small preset (27 M parameters)
meets the per-model rule in every cell a lite run prints at 12.5 %, with and without either proxy, and pooled with
the twelve models' study every printed cell still meets the rule over all models.

``benchmarks/results/lite_coverage_small_hf.txt`` is ``bench_lite_coverage.py --models small-hf``;
``lite_coverage_proxies_200_today.txt`` the twelve models with the same code.  The pooled coverage is each cell's
coverage weighted by its count of intervals (the study's ``n``), as the study itself pools its models.
"""
import re
from pathlib import Path

from lite_study_tables import proxy_cells

from StaICC.stats.lite import REQUIRED_COVERAGE, REQUIRED_MODEL_COVERAGE, estimable

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
SMALL = RESULTS / "lite_coverage_small_hf.txt"
TWELVE = RESULTS / "lite_coverage_proxies_200_today.txt"
FRACTION = 0.125
SUMMARY = re.compile(r"\s+0\.1250\s+(\S+)\s+(.+?)\s+(\d+)\s+\S+\s+\S+\s+(\S+)%\s+(\S+) \((\S+)%\)\s+(?:yes|no)$")


def summary(path: Path) -> dict:
    """(sub-benchmark, metric, row) -> (intervals n, coverage %, worst model's coverage %), the plain table at 12.5 %."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = SUMMARY.match(line)
        if m:
            metric = m.group(2)
            row = "averaged" if metric.endswith(" (averaged)") else "dataset"
            found[(m.group(1), metric.replace(" (averaged)", ""), row)] = (int(m.group(3)), float(m.group(4)),
                                                                           float(m.group(6)))
    return found


def _printed(cells) -> list:
    return [k for k in cells if estimable(k[-3], k[-2], FRACTION, k[-1])]


def test_the_small_model_meets_the_per_model_rule_in_every_printed_cell():
    small = summary(SMALL)
    printed = _printed(small)
    assert len(printed) == 29  # every cell a lite run prints at 12.5 %, read whole
    assert {k: small[k][1] for k in printed if small[k][1] < 100 * REQUIRED_MODEL_COVERAGE} == {}
    proxied = {cell: coverage for cell, (coverage, _) in proxy_cells(SMALL, FRACTION).items()}
    assert len(_printed(proxied)) == 2 * 29
    assert {k: v for k, v in proxied.items() if k in _printed(proxied) and v < 100 * REQUIRED_MODEL_COVERAGE} == {}


def test_pooled_with_the_twelve_models_every_printed_cell_meets_the_rule():
    small, twelve = summary(SMALL), summary(TWELVE)
    assert set(small) == set(twelve)
    for cell in _printed(twelve):
        (n1, c1, worst), (n2, c2, _) = twelve[cell], small[cell]
        pooled = (n1 * c1 + n2 * c2) / (n1 + n2)
        assert pooled >= 100 * REQUIRED_COVERAGE, (cell, pooled)
        assert min(worst, c2) >= 100 * REQUIRED_MODEL_COVERAGE, cell
