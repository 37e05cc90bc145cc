"""The fitted calibrations as methods: each one's result equals the hand-wired Python route, bit for bit.

As ``test_method_runs.py`` does for the standard's calibrations: a tiny random Llama whose scorer computes each
prompt alone, ``run_methods`` against ``calibration.train(...)`` with the scorer as feedforward and a run with
the calibrated inference (BCL: over each pass).
"""
import pytest

pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")

from method_routes import CALIBRATION_NUMBER, DATASETS, FITTED_METHODS, LIMIT, backend, hand_wired  # noqa: E402

from StaICC.engine.selection import QuerySubset  # noqa: E402
from StaICC.methods.builtin import built_in  # noqa: E402
from StaICC.methods.run import run_methods  # noqa: E402


@pytest.fixture(scope="module")
def fitted_run():
    methods = [built_in(name, calibration_number=CALIBRATION_NUMBER) for name in FITTED_METHODS]
    return run_methods(backend(), methods, "Normal", list(DATASETS), test_items=QuerySubset.first(LIMIT))


def _rows(result, dataset):
    return [r["prediction"] for r in result["Normal"].records if r["dataset"] == dataset]


@pytest.mark.parametrize("method", FITTED_METHODS)
def test_each_fitted_method_equals_the_hand_wired_route_bit_for_bit(fitted_run, method):
    expected = hand_wired("Normal", (method,))[method]
    result = fitted_run[method]["Normal"]
    for dataset in DATASETS:
        summary, rows = expected[dataset]
        assert result["Divided results"][dataset] == summary  # every metric, to the last bit
        assert _rows(fitted_run[method], dataset) == [list(row) for row in rows]  # and every query's row
        assert _rows(fitted_run[method], dataset) != _rows(fitted_run["vanilla"], dataset)  # not vacuous
    assert all(f"method {method}" in settings for settings in result.metadata["non_standard_settings"].values())


def test_the_fitted_methods_share_their_calibration_prompts(fitted_run):
    """Nine methods, one set of calibration prompts per dataset (label scores), vanilla's test prompts once."""
    meta = fitted_run.metadata
    assert meta["distinct_prompts"] == meta["asked"] == len(DATASETS) * (2 * LIMIT + CALIBRATION_NUMBER)


def test_pmi_equals_the_hand_wired_route_bit_for_bit():
    """By hand: the experimentor run once with an empty-query generator (each prompt's premise-free twin, the same
    demonstrations), then again with an inference that divides by those answers, in order."""
    import StaICC
    from method_routes import scorer

    from StaICC.methods.calibration.pmi import pmi_rows
    from StaICC.prompt import empty_query_generator
    subset = QuerySubset.first(LIMIT)
    result = run_methods(backend(), ["pmi"], "Normal", list(DATASETS), test_items=subset)
    score = scorer()
    free_bench = StaICC.Normal(datasets=list(DATASETS), test_items=subset)
    bench = StaICC.Normal(datasets=list(DATASETS), test_items=subset)
    for i, dataset in enumerate(DATASETS):
        free = free_bench[i]
        free.prompt_former.pseudo_query_generater = empty_query_generator(free.prompt_former.triplet_dataset.calibration)
        _, _, outputs = free.auto_run(forward_inference=score, batched_inference=True, return_outputs=True,
                                      prediction_kind="probabilities")
        waiting = list(outputs["prob."])

        def divided(prompt, label_space, waiting=waiting):
            rows = score(prompt=prompt, label_space=label_space)
            return pmi_rows(rows, [waiting.pop(0) for _ in rows])
        summary, _, expected = bench[i].auto_run(forward_inference=divided, batched_inference=True,
                                                 return_outputs=True, prediction_kind="probabilities")
        assert not waiting
        assert result["pmi"]["Normal"]["Divided results"][dataset] == summary
        assert _rows(result["pmi"], dataset) == [list(row) for row in expected["prob."]]
        assert _rows(result["pmi"], dataset) != _rows(result["vanilla"], dataset)
    assert result.metadata["asked"] == len(DATASETS) * 2 * (2 * LIMIT)  # vanilla's prompts and one twin each
