"""One model through every route the package offers: which routes, against which baseline, promising what.

The workload and the model are in :mod:`route_workload`, the routes in :mod:`route_runs`.
Each route is compared with its baseline (an ``hf`` backend run in one process), every number and
every prompt's prediction: bit-identical for every ``hf`` route (its default numerics are
batch-invariant: no packing, call size, thread count, shard or launcher moves a bit of a
prompt's scores), and for cache replay and preentered rows; elsewhere (``numerics=fast``, the
scorer as a plain function, servers) within :data:`TOLERANCE` per metric by
:func:`~route_workload.differences`, the largest absolute difference per metric.  ``tests/routes/test_route_matrix.py`` asserts the promises; ``benchmarks/route_matrix.py``
prints the table.
"""
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from route_runs import (batch_api_round_trip, cache_replay, function_route, hf_route, label_token_server,
                        llama_cpp_server, preentered_route, ray_launcher, shard_route, torchrun, transformers_serve)
from route_workload import (BENCHMARKS, DATASETS, GENERATED_TOKENS, LIMIT, METRIC_NAMES, Context, Numbers,  # noqa: F401
                            RouteUnavailable, differences, make_model, timed)

#: the largest difference each metric may show on a route that is not bit-identical: argmax metrics
#: none (float32 rounding of 1e-7 moves no argmax of this model), the others far above the float32
#: rounding they carry (1e-7 relative) and far below any difference a reader would report
TOLERANCE = {"accuracy": 0.0, "macro_F1": 0.0, "averaged_truelabel_likelihood": 1e-6,
             "expected_calibration_error_1": 1e-6, "own_likelihood_nonstandard": 1e-6, "own_ece_nonstandard": 1e-6}

#: llama.cpp computes the same float32 weights with its own kernels: probabilities agree to about 2e-3
#: (tests/backends/test_backend_openai_server.py), so an argmax may flip where two labels are that close
#: (one test item of 16 moves accuracy and macro-F1 by at most 1/16 here)
LLAMA_CPP_TOLERANCE = dict(dict.fromkeys(TOLERANCE, 5e-3), accuracy=1 / 16, macro_F1=1 / 16)


@dataclass(frozen=True)
class Route:
    """A route, the baseline it is compared with, and what is promised."""

    name: str
    run: Callable[[Context], Numbers]
    bit_identical: bool
    baseline: str = "hf"
    note: str = ""
    tolerance: Optional[Dict[str, float]] = None  # another tolerance than TOLERANCE (other kernels)


#: the baselines the routes are compared with (each an hf backend run in one process)
BASELINES: Dict[str, Callable[[Context], Numbers]] = {
    "hf": hf_route(),
    "hf scoring=sequence": hf_route(scoring="sequence"),
    "hf scoring=generate": hf_route(scoring="generate", max_new_tokens=str(GENERATED_TOKENS)),
}

ROUTES: List[Route] = [
    Route("hf packing=prefix (the CPU default)", hf_route(packing="prefix"), True),
    Route("hf packing=rows", hf_route(packing="rows"), True),
    Route("hf packing=tree", hf_route(packing="tree"), True),
    Route("hf requests_per_call=1", hf_route(requests_per_call=1), True),
    Route("hf requests_per_call=7", hf_route(requests_per_call=7), True),
    Route("hf requests_per_call=64", hf_route(requests_per_call=64), True),
    Route("hf threads=2", hf_route(threads=2), True),
    Route("hf numerics=fast", hf_route(numerics="fast"), False),
    Route("hf numerics=fast requests_per_call=7", hf_route(numerics="fast", requests_per_call=7), False),
    Route("function (the scorer), prediction_kind='probabilities'", function_route("probabilities"), False),
    Route("--shard 2 (unit query) + cache merge", shard_route(2, "query"), True),
    Route("--shard 3 (unit query) + cache merge", shard_route(3, "query"), True),
    Route("--shard 2 --shard-unit call + cache merge", shard_route(2, "call"), True),
    Route("--shard 3 --shard-unit call + cache merge", shard_route(3, "call"), True),
    Route("torchrun, 2 CPU ranks (gloo)", torchrun, True),
    Route("--launcher ray, local cluster, 2 shards", ray_launcher, True),
    Route("cache replay", cache_replay, True),
    Route("preentered probabilities, prediction_kind='probabilities'", preentered_route("probabilities", "probabilities"),
          True),
    Route("preentered log-likelihoods (transformers), prediction_kind='loglikelihoods'",
          preentered_route("loglikelihoods", "loglikelihoods"), False),
    Route("openai -> label-token server (last_token)", label_token_server, False),
    Route("openai -> llama.cpp server (scoring=sequence)", llama_cpp_server, False, "hf scoring=sequence",
          tolerance=LLAMA_CPP_TOLERANCE),
    Route("Batch API round trip (openai, scoring=sequence)", batch_api_round_trip, False, "hf scoring=sequence"),
    Route("openai -> transformers serve (scoring=generate)", transformers_serve, True, "hf scoring=generate"),
]

#: the hf routes again in bfloat16, where rounding moves predictions: every one bit-identical to the first, per prompt
BFLOAT16_ROUTES: List[Route] = [
    Route(name, run, True) for name, run in (
        ("bf16 packing=prefix", hf_route(packing="prefix", dtype="bfloat16")),
        ("bf16 packing=rows", hf_route(packing="rows", dtype="bfloat16")),
        ("bf16 packing=tree requests_per_call=7", hf_route(packing="tree", requests_per_call=7, dtype="bfloat16")),
        ("bf16 requests_per_call=1", hf_route(requests_per_call=1, dtype="bfloat16")),
        ("bf16 requests_per_call=64 threads=2", hf_route(requests_per_call=64, threads=2, dtype="bfloat16")),
        ("bf16 --shard 2 (unit query) + cache merge", shard_route(2, "query", dtype="bfloat16")))]

#: routes that keep the standard's rule on floating-point probabilities: equal, or a notice says why not
STANDARD_RULE_ROUTES: List[Route] = [
    Route("function (the scorer), the standard's rule", function_route(None), False,
          note="notices function None"),
    Route("preentered log-likelihoods, the standard's rule", preentered_route("loglikelihoods", None), False,
          note="notices preentered loglikelihoods None"),
]
