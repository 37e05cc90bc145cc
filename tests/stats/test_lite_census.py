"""A lite run of the whole test set (``--lite 1.0``) is the full run: every estimate is the full run's number, bit
for bit, with an interval of width zero (its averaged row included)."""
import warnings

import pytest

from StaICC.backends.reference_model import lexical_icl
from StaICC.errors import TamperingWarning
from StaICC.sampling.lite import LiteSample
from StaICC.spec import parts_of
from StaICC.runs.lite import run_lite
from StaICC.subbenchmarks.suite import build_suite, run_suite

pytest.importorskip("numpy")

DATASETS = ["financial_phrasebank", "TREC"]


def _full_value(result, name, part, row, metric):
    pairs = parts_of(name)
    compound = not (len(pairs) == 1 and pairs[0][1] == name)
    key = next(k for k, p in pairs if p == part)
    body = result[name][key] if compound else result[name]
    found = body["Averaged results"] if row == "Averaged" else body["Divided results"][row]
    found = found.get("sensitivity", found)[metric]
    return found[0] if part == "GLER" and isinstance(found, (list, tuple)) else found


@pytest.mark.parametrize("lite", [1.0, LiteSample(items=100_000)])
def test_a_lite_run_of_every_item_is_the_full_run_bit_for_bit_with_zero_width(lite):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        full = run_suite(lexical_icl, suite=build_suite("all", DATASETS, 4), progress=False)
        whole = run_lite(lexical_icl, lite, "all", datasets=DATASETS, k=4, progress=False)
    checked = 0
    for name in full:
        for _key, part in parts_of(name):
            for row, metrics in whole.lite.estimates[part].items():
                for metric, estimate in metrics.items():
                    expected = _full_value(full, name, part, row, metric)
                    assert estimate.estimable, (part, row, metric)
                    # the same bits: compared by repr, so that 0.1 + 0.2 against 0.30000000000000004 would fail
                    assert repr(estimate.value) == repr(expected), (part, row, metric)
                    assert repr(estimate.low) == repr(estimate.high) == repr(expected), (part, row, metric)
                    checked += 1
    assert checked >= 45  # every sub-benchmark's metrics, per dataset and averaged
