"""Methods as an axis of a run: each method's result equals the hand-wired Python route, bit for bit.

The hand-wired route (``tests/method_routes.py``) trains each calibration with the experimentor's
prompt writer and a feedforward, then runs the calibrated inference; ``run_methods`` asks the same
prompts through the one runner, the backend and the cache.  The model is a tiny random Llama whose
scorer computes each prompt alone, so the answers do not depend on batching.
"""
import pytest

pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")

from method_routes import CALIBRATION_NUMBER, DATASETS, LIMIT, METHODS, backend, hand_wired  # noqa: E402

from StaICC.engine.selection import QuerySubset  # noqa: E402
from StaICC.methods.builtin import built_in  # noqa: E402
from StaICC.methods.run import run_methods  # noqa: E402


def _methods():
    return [built_in(name) if name in ("vanilla", "noisy_channel", "batch")
            else built_in(name, calibration_number=CALIBRATION_NUMBER) for name in METHODS]


@pytest.fixture(scope="module")
def normal_run():
    return run_methods(backend(), _methods(), "Normal", list(DATASETS), test_items=QuerySubset.first(LIMIT))


@pytest.mark.parametrize("method", METHODS)
def test_each_method_equals_the_hand_wired_route_bit_for_bit(normal_run, method):
    expected = hand_wired("Normal")[method]
    result = normal_run[method]["Normal"]
    for dataset in DATASETS:
        summary, rows = expected[dataset]
        assert result["Divided results"][dataset] == summary  # every metric, to the last bit
        recorded = [r["prediction"] for r in result.records if r["dataset"] == dataset]
        assert recorded == [list(row) for row in rows]  # and every query's row
    assert result.metadata["standard"] is False
    if method != "vanilla":
        assert all(f"method {method}" in settings for settings in result.metadata["non_standard_settings"].values())


def _rows(result, dataset):
    return [r["prediction"] for r in result["Normal"].records if r["dataset"] == dataset]


def test_methods_differ_from_vanilla_where_they_should(normal_run):
    """The equality above is not vacuous: every method changes the rows vanilla has, except where the standard
    says a calibration gives the plain probabilities back: 16 draws of TREC's calibration set miss its rarest
    label, so hidden calibration and kNN fail there (with the standard's warning) and return vanilla's rows."""
    for dataset in DATASETS:
        vanilla = _rows(normal_run["vanilla"], dataset)
        for method in METHODS[1:]:
            failed = dataset == "TREC" and method in ("hidden", "knn", "knn_centroid")
            assert (_rows(normal_run[method], dataset) == vanilla) is failed, (method, dataset)


def test_the_probability_calibrations_ask_the_test_prompts_once(normal_run):
    """Contextual, domain and batch read vanilla's answers: the distinct requests are vanilla's test prompts,
    the noisy channel's, each calibration's training prompts (kNN and its centroid form share theirs) and
    one representation per test prompt for knn and for hidden."""
    queries = 2 * LIMIT  # two repeats of the test items, per dataset
    training = CALIBRATION_NUMBER * 4  # contextual, domain, knn (= knn_centroid), hidden
    per_dataset = queries + queries + training + 2 * queries
    meta = normal_run.metadata
    assert meta["distinct_prompts"] == meta["asked"] == len(DATASETS) * per_dataset
    assert meta["from_cache"] == 0


def test_template_sensitivity_trains_once_per_template_and_gler_once():
    from StaICC.methods.run import plan_methods
    from StaICC.subbenchmarks.suite import build_suite
    suite = build_suite("GLER,Template_sens", ["TREC"], test_items=QuerySubset.first(LIMIT))
    planned = plan_methods(backend(), suite, [built_in("contextual", calibration_number=4)])
    gler, template_sens = planned["contextual"]
    assert len(gler.training) == 1 and set(gler.pass_fits) == {0}  # label noise never reaches training prompts
    assert len(template_sens.training) == len(template_sens.work.plan.passes) == 9
    prompts = [items[0][0] for _data, items in template_sens.training]
    assert len(set(prompts)) == 9  # each written in its own template


def test_vanilla_in_a_methods_run_is_the_plain_run_bit_for_bit():
    """With the engine's batching (prefix sharing, prompts in text order), the methods' own prompts are asked in
    batches of their own: vanilla's batches, and so its answers, are a plain run's to the last bit."""
    from backend_helpers import tiny_pair

    from StaICC.backends.hf import HFBackend
    from StaICC.subbenchmarks.suite import run_suite
    model, tokenizer = tiny_pair("llama")
    subset = QuerySubset.first(LIMIT)
    plain = run_suite(HFBackend(model, tokenizer, model_id="tiny"), "Normal,Triplet_bias", list(DATASETS),
                      test_items=subset)
    methods = [built_in("vanilla"), built_in("noisy_channel"), built_in("contextual", calibration_number=4),
               built_in("hidden", calibration_number=4)]
    result = run_methods(HFBackend(model, tokenizer, model_id="tiny"), methods, "Normal,Triplet_bias",
                         list(DATASETS), test_items=subset)
    assert repr(dict(result["vanilla"])) == repr(dict(plain))
    assert [r["prediction"] for r in result["vanilla"].records] == [r["prediction"] for r in plain.records]
