"""Route independence: one model, every route the package offers, the same standard numbers.

The model and the workload are in ``tests/route_workload.py``, the routes in ``tests/route_runs.py`` and
what each promises in ``tests/route_matrix.py`` (``benchmarks/route_matrix.py``
prints the same comparison as a table).  Every route is compared with its baseline, an ``hf``
backend run in one process: bit-identical where the route computes every answer in calls of
the same composition (cache replay, preentered rows, call-unit shards, the default packing),
within :data:`~route_matrix.TOLERANCE` per metric elsewhere (other batch shapes, packings,
threads, servers: float32 rounding of about 1e-7, which the softmax branch the package's
backends take can no longer turn into a different branch).  A plain function or preentered
log-likelihoods under the standard's rule either give the same numbers or print the notice
that says why not.
"""
import pytest

pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')

import route_matrix  # noqa: E402
from route_matrix import (BASELINES, BFLOAT16_ROUTES, ROUTES, STANDARD_RULE_ROUTES, TOLERANCE, Context, RouteUnavailable,  # noqa: E402
                          differences, make_model)


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    import torch
    torch.set_num_threads(1)
    model_dir = make_model(str(tmp_path_factory.mktemp("route-model")))
    return Context(model_dir, str(tmp_path_factory.mktemp("routes")))


@pytest.fixture(scope="module")
def baselines():
    return {}


def baseline(context, baselines, name):
    if name not in baselines:
        baselines[name] = BASELINES[name](context)
    return baselines[name]


def test_the_baseline_is_deterministic_and_its_labels_are_distinct_tokens(context, baselines):
    from StaICC.backends.kernels import label_token_ids
    _, tokenizer = context.pair()
    for labels in (["negative", "positive"], ["short", "entity", "description", "person", "location", "number"]):
        ids = label_token_ids(tokenizer, labels)
        assert len(set(ids)) == len(ids), labels  # no two labels tie on a shared last token
    first = baseline(context, baselines, "hf")
    assert len(first) > 100
    assert BASELINES["hf"](context) == first  # the same process, the same numbers, to the bit


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_every_route_gives_the_baselines_numbers(context, baselines, route):
    try:
        numbers = route.run(context)
    except RouteUnavailable as missing:
        pytest.skip(str(missing))
    reference = baseline(context, baselines, route.baseline)
    if route.bit_identical:
        assert numbers == reference
        return
    worst = differences(reference, numbers)
    tolerance = route.tolerance or TOLERANCE
    for metric, gap in worst.items():
        assert gap <= tolerance[metric], f"{route.name}: {metric} moved by {gap:.3g} (tolerance {tolerance[metric]})"


def test_the_hf_routes_give_the_same_bits_per_prompt_in_bfloat16(context):
    """In bfloat16 the library's forward moves predictions with the batch; the default numerics move no bit."""
    first, *others = BFLOAT16_ROUTES
    reference = first.run(context)
    assert reference != baseline(context, {}, "hf")  # bfloat16 rounds otherwise than float32: a real second run
    for route in others:
        numbers = route.run(context)
        assert [k for k in reference if numbers.get(k) != reference[k]] == [], route.name


@pytest.mark.parametrize("route", STANDARD_RULE_ROUTES, ids=[r.name for r in STANDARD_RULE_ROUTES])
def test_the_standards_rule_gives_the_numbers_or_says_why_not(context, baselines, route):
    numbers = route.run(context)
    worst = differences(baseline(context, baselines, route.baseline), numbers)
    notices = context.cache[route.note]
    assert len(notices) <= len(route_matrix.BENCHMARKS.split(","))  # at most one line per run (one per sub-benchmark here)
    if all(gap <= TOLERANCE[metric] for metric, gap in worst.items()):
        return
    assert notices, f"{route.name} moved {worst} without a notice"
    assert "prediction_kind=" in notices[0]
    assert worst["accuracy"] == 0 and worst["macro_F1"] == 0  # argmax metrics never move with the branch


def test_handed_back_loglikelihoods_are_announced_without_the_argument(context):
    route_matrix.preentered_route("loglikelihoods", None)(context)
    notices = context.cache["notices preentered loglikelihoods None"]
    assert len(notices) == 2  # one line for each sub-benchmark's run: Normal's, GLER's
    assert "look like log-likelihoods" in notices[0] and "Normal TREC, Normal rotten_tomatoes" in notices[0]
    assert "prediction_kind='loglikelihoods'" in notices[0]
