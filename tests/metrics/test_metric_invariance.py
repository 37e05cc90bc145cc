"""Properties every metric of the registry must have, one parametrised test per property.

In the style of scikit-learn's ``sklearn/metrics/tests/test_common.py``: sets of metric
names (derived from :data:`StaICC.metrics.METRICS`) say which property applies to which
metric, and each test runs over its whole set, so a new metric is checked as soon as it
is registered.
"""
import math
import random

import pytest

from StaICC.metrics import (BENCHMARK_METRICS, METRICS, argmax, bias_metrics, consistency_metrics, get_metric,
                            higher_is_better, normal_metrics, post_bias_metrics, softmax)

N_LABELS = 3
N_ROWS = 60  # a multiple of every loop length used below
LOOP = 20

ALL_METRICS = sorted(METRICS)
SCALAR_METRICS = sorted(n for n, m in METRICS.items() if not m.vector_valued)
VECTOR_METRICS = sorted(n for n, m in METRICS.items() if m.vector_valued)
# consistency groups rows by position (row i belongs to item i mod L), so row order matters
ROW_ORDER_INVARIANT = sorted(set(ALL_METRICS) - {"consistency"})
# only each row's argmax is read: an int prediction (one-hot row) loses nothing
LABELS_ONLY = sorted(n for n, m in METRICS.items() if m.needs == "labels")
# rows are softmaxed unless the whole matrix passes the exact probability check
SOFTMAXED_SCALARS = sorted(n for n, m in METRICS.items() if m.softmaxed and not m.vector_valued)
BOUNDED_01 = ["accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1", "consistency",
              "ece_equal_mass_1", "ece_equal_mass_10", "classwise_ece", "selective_accuracy", "coverage_accuracy_area",
              "ece_platt"]
BOUNDED_02 = ["brier_score"]


def call(name, truth, rows):
    function = METRICS[name].function
    if name == "consistency":
        return function(truth, rows, LOOP)
    return function(truth, rows)


def logit_rows(seed, n_rows=N_ROWS, width=N_LABELS, scale=3.0):
    rng = random.Random(seed)
    return [[rng.gauss(0, scale) for _ in range(width)] for _ in range(n_rows)]


def dyadic_probability_rows(seed, n_rows=N_ROWS, width=N_LABELS):
    """Probability rows in multiples of 1/64, without a tied maximum.

    Every sum is exact, so every column order passes the exact probability check; a tied
    maximum would make the argmax depend on the column order (the first index wins).
    """
    rng = random.Random(seed)
    rows = []
    while len(rows) < n_rows:
        cuts = sorted(rng.randint(0, 64) for _ in range(width - 1))
        parts = [b - a for a, b in zip([0] + cuts, cuts + [64])]
        if parts.count(max(parts)) == 1:
            rows.append([p / 64 for p in parts])
    return rows


def truth_covering_all_labels(seed, n_rows=N_ROWS, width=N_LABELS):
    rng = random.Random(seed)
    truth = [i % width for i in range(width)] + [rng.randrange(width) for _ in range(n_rows - width)]
    rng.shuffle(truth)
    return truth


def assert_close(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x == pytest.approx(y, rel=1e-9, abs=1e-12)
    else:
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


ROW_KINDS = {"logits": logit_rows, "probabilities": dyadic_probability_rows}


# -- the registry itself ----------------------------------------------------------------------------
def test_registry_entries_are_complete():
    for name, info in METRICS.items():
        assert info.name == name and callable(info.function)
        assert info.needs in ("labels", "probabilities")
        assert (info.higher_is_better is None) == info.vector_valued
        assert info.display_name and info.result_key


def test_benchmark_metric_sets_match_the_default_metric_dicts():
    defaults = {"Normal": normal_metrics(), "Contextual_bias": bias_metrics(), "Post_bias": post_bias_metrics()}
    for benchmark, metrics in defaults.items():
        registered = [METRICS[n] for n in BENCHMARK_METRICS[benchmark]]
        assert [m.result_key for m in registered] == list(metrics)
        assert [m.function for m in registered] == list(metrics.values())
    assert [METRICS[n].result_key for n in BENCHMARK_METRICS["Template_sens"]] == list(consistency_metrics())


def test_lookup_by_name_alias_and_result_key():
    assert get_metric("bias_mean_entropy_metric") is METRICS["bias_entropy"]
    assert get_metric("DL div.") is METRICS["post_bias_dl_div"]
    assert get_metric("distribution", "Post_bias") is METRICS["post_bias_distribution"]
    assert get_metric("distribution", "Domain_bias") is METRICS["bias_distribution"]
    assert get_metric("consistency_128", "Demo_sens").name == "consistency"
    assert get_metric("consistency").function is METRICS["consistency"].function
    assert higher_is_better("expected_calibration_error_1") is False
    assert higher_is_better("entropy", "Contextual_bias") is True
    assert higher_is_better("distribution", "Contextual_bias") is None
    with pytest.raises(ValueError, match="several metrics"):
        get_metric("distribution")
    with pytest.raises(KeyError, match="unknown metric 'entropy' in Normal"):
        get_metric("entropy", "Normal")
    with pytest.raises(ValueError, match="unknown sub-benchmark 'Nope'"):
        get_metric("accuracy", "Nope")


# -- invariances -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(ROW_KINDS))
@pytest.mark.parametrize("name", ROW_ORDER_INVARIANT)
def test_row_order_invariance(name, kind):
    rows, truth = ROW_KINDS[kind](1), truth_covering_all_labels(2)
    order = list(range(N_ROWS))
    random.Random(3).shuffle(order)
    assert_close(call(name, truth, rows), call(name, [truth[i] for i in order], [rows[i] for i in order]))


@pytest.mark.parametrize("kind", sorted(ROW_KINDS))
@pytest.mark.parametrize("name", LABELS_ONLY)
def test_int_labels_equal_one_hot_rows(name, kind):
    rows, truth = ROW_KINDS[kind](4), truth_covering_all_labels(5)
    one_hot = [[1 if c == argmax(softmax(row)) else 0 for c in range(N_LABELS)] for row in rows]
    assert call(name, truth, rows) == call(name, truth, one_hot)


@pytest.mark.parametrize("kind", sorted(ROW_KINDS))
@pytest.mark.parametrize("name", ALL_METRICS)
def test_label_permutation(name, kind):
    """Renaming the labels (columns and ground truth together) changes no scalar and permutes vectors."""
    rows, truth = ROW_KINDS[kind](6), truth_covering_all_labels(7)
    permutation = [2, 0, 1]  # new column j holds old column permutation[j]
    new_index = {old: new for new, old in enumerate(permutation)}
    permuted_rows = [[row[old] for old in permutation] for row in rows]
    permuted_truth = [new_index[g] for g in truth]
    original, permuted = call(name, truth, rows), call(name, permuted_truth, permuted_rows)
    if METRICS[name].vector_valued:
        assert_close(permuted, [original[old] for old in permutation])
    else:
        assert_close(permuted, original)


@pytest.mark.parametrize("name", LABELS_ONLY)
def test_probabilities_versus_logits_for_label_metrics(name):
    rows, truth = logit_rows(8), truth_covering_all_labels(9)
    assert call(name, truth, rows) == call(name, truth, [softmax(row) for row in rows])


@pytest.mark.parametrize("name", SOFTMAXED_SCALARS)
def test_logit_shift_invariance(name):
    """Adding a constant to a row of logits does not change its softmax, hence the metric (up to rounding)."""
    rows, truth = logit_rows(10), truth_covering_all_labels(11)
    rng = random.Random(12)
    shifted = [[v + c for v in row] for row, c in zip(rows, (rng.uniform(-50, 50) for _ in rows))]
    assert_close(call(name, truth, rows), call(name, truth, shifted))


# -- ranges and directions --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(ROW_KINDS))
@pytest.mark.parametrize("name", SCALAR_METRICS)
def test_scalar_metrics_in_range(name, kind):
    value = call(name, truth_covering_all_labels(14), ROW_KINDS[kind](13))
    assert math.isfinite(value)
    if name in BOUNDED_01:
        assert 0 <= value <= 1
    elif name in BOUNDED_02:
        assert 0 <= value <= 2
    elif name == "bias_entropy":
        assert 0 <= value <= math.log(N_LABELS) + 1e-12
    else:
        assert value >= -1e-12


EXTREME_ROWS = [[1e308, 1e308, 1e308], [-1e308, -1e308, -1e308], [1.7976931348623157e308, -1.7976931348623157e308, 0.0],
                [5e-324, 0.0, 0.0], [1e308, 1.0, 0.0], [0.0, 0.0, 1.0]]


@pytest.mark.parametrize("row", EXTREME_ROWS, ids=[str(i) for i in range(len(EXTREME_ROWS))])
@pytest.mark.parametrize("name", ALL_METRICS)
def test_finite_extreme_rows_give_finite_values(name, row):
    rows = [list(row) for _ in range(N_ROWS)]
    value = call(name, truth_covering_all_labels(15), rows)
    values = value if isinstance(value, list) else [value]
    assert all(math.isfinite(v) for v in values), value


def _confident(truth, right):
    """Rows putting logit 4 on the true label (right=True) or on the next label (right=False)."""
    return [[4.0 if c == (g if right else (g + 1) % N_LABELS) else 0.0 for c in range(N_LABELS)] for g in truth]


# ECE after Platt scaling is left out: all-right and all-wrong rows are equally easy to recalibrate
@pytest.mark.parametrize("name", ["accuracy", "averaged_truelabel_likelihood", "macro_F1",
                                  "expected_calibration_error_1", "brier_score", "ece_equal_mass_1",
                                  "ece_equal_mass_10", "classwise_ece", "selective_accuracy", "coverage_accuracy_area"])
def test_direction_right_beats_wrong(name):
    truth = truth_covering_all_labels(16)
    right, wrong = call(name, truth, _confident(truth, True)), call(name, truth, _confident(truth, False))
    assert (right > wrong) == METRICS[name].higher_is_better


def test_direction_platt_ece():
    """Platt scaling removes a monotone over-confidence: what the raw ECE sees, the Platt ECE does not."""
    rng = random.Random(17)
    truth, rows = [], []
    for _ in range(N_ROWS * 5):
        c = rng.uniform(0.5, 0.99)
        right = rng.random() < c - 0.3  # right far less often than the confidence says, but more when higher
        truth.append(0 if right else 1)
        rows.append([c, 1 - c])
    raw, platt = call("ece_equal_mass_10", truth, rows), call("ece_platt", truth, rows)
    assert raw > 0.25 and platt < 0.1
    assert METRICS["ece_platt"].higher_is_better is False


def test_direction_bias_metrics():
    truth = [i % N_LABELS for i in range(N_ROWS)]  # uniform label frequencies
    uniform = [[0.25, 0.25, 0.5] for _ in range(N_ROWS)]
    balanced = [[1.0 if c == g else 0.0 for c in range(N_LABELS)] for g in truth]  # mean = frequencies
    skewed = [[1.0, 0.0, 0.0] for _ in range(N_ROWS)]
    # entropy: a balanced mean prediction is less biased, and higher is better
    assert METRICS["bias_entropy"].function(truth, balanced) > METRICS["bias_entropy"].function(truth, skewed)
    assert METRICS["bias_entropy"].higher_is_better
    # KL to the label frequencies: 0 when they match, positive otherwise, and lower is better
    assert METRICS["post_bias_dl_div"].function(truth, balanced) == 0 < METRICS["post_bias_dl_div"].function(truth, uniform)
    assert METRICS["post_bias_dl_div"].higher_is_better is False


def test_direction_consistency():
    truth = [0] * N_ROWS
    stable = [[1.0, 0.0, 0.0]] * N_ROWS
    varying = [[1.0 if c == (i // LOOP) % N_LABELS else 0.0 for c in range(N_LABELS)] for i in range(N_ROWS)]
    assert call("consistency", truth, stable) == 1 > call("consistency", truth, varying)
    assert METRICS["consistency"].higher_is_better


def test_consistency_lookup_binds_the_benchmarks_loop_length():
    """A statistic recomputing a reported consistency needs the loop length the benchmark used."""
    from StaICC import Demo_sens, Template_sens
    model = lambda prompt, label_space: [len(prompt) % 3, 1.0]  # noqa: E731
    for cls in (Template_sens, Demo_sens):
        bench = cls(datasets=["rotten_tomatoes"])
        outcome = bench[0].execute(model)  # auto_run returns no outputs for these, as the original
        result, outputs = outcome.summary, outcome.outputs
        info = get_metric("consistency", cls.__name__)
        assert info.function(outputs["groundtruth"], outputs["prob."]) == result["sensitivity"]["consistency"]
    assert get_metric("consistency_7").function([0] * 14, [[1, 0]] * 14) == 1.0
