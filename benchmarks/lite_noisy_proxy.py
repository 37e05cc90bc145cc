"""A proxy of known quality for the lite proxy study: the target's own run with seeded noise on every answer.

How good must a proxy be for a lite run's intervals to be much narrower?  The study's real proxies (the lexical
model, the trained toy family's smaller members) each follow the target well on some sub-benchmarks and not on
others, so their width ratios mix the proxy's quality with the estimators'.  This script writes a proxy whose
quality is one dial: every record of the target's full run (``--log-samples``) keeps its prompt, and its
probabilities become softmax(log p + sigma * e), e standard normal, drawn per record from a seeded
``random.Random`` in the records' order (the same command writes the same file); with ``--shared f`` a share f of
its variance is drawn once per test item and is the same in every prompt of that item, as a real proxy's errors
are (an item it finds hard, it finds hard in every pass, template and demonstration set).  sigma = 0 is the target
itself (the oracle); the larger sigma, the less the proxy follows the target, equally on every sub-benchmark
(label noise, pseudo-queries, templates and demonstrations included).  The noisy runs are then proxies of
``benchmarks/lite_proxy_trained.py``, which prints each one's item correlation with the target on Normal and its
width ratios.  A study device, not a model: no real proxy has noise independent of the prompt.

The noisy run's ``results.json`` is the target's with every number the records give recomputed from the noisy
records by the package's own code (:func:`recomputed`: each dataset's metrics by
:func:`StaICC.stats.bootstrap.dataset_statistic`, as ``staicc report`` and ``staicc verify`` recompute them, a slope's
per-pass values and intercept too, each sub-benchmark's average by the spec table's rule), so the run is one whose
records give its results: ``staicc verify`` passes it and ``staicc run --lite-proxy`` accepts it.  Its metadata
(prompts, answer counts, the exact-sum rule: a softmax's rows are probabilities as the target's are) is the
target's, which the noise does not change.

    python benchmarks/lite_noisy_proxy.py --target RUNS/target --out /tmp/noisy/s050 --sigma 0.5
"""
import argparse
import json
import math
import os
import random
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def noisy(prediction: List[float], sigma: float, rng: random.Random, item: List[float], shared: float) -> List[float]:
    """softmax(log p + sigma * e) of one probability row (a zero probability stays 0), e = sqrt(shared) * the
    item's own draw + sqrt(1 - shared) * this record's."""
    mine = [math.sqrt(shared) * z + math.sqrt(1 - shared) * rng.gauss(0.0, 1.0) for z in item]
    logits = [math.log(p) + sigma * e if p > 0 else -math.inf for p, e in zip(prediction, mine)]
    top = max(logits)
    weights = [math.exp(v - top) for v in logits]
    total = sum(weights)
    return [w / total for w in weights]


def item_draw(seed: int, record: Any, width: int) -> List[float]:
    """The test item's own draw, one per label: the same for every prompt of the item (every sub-benchmark, pass,
    template and repeat), seeded by the item's dataset and row."""
    rng = random.Random(f"{seed}:{record.get('dataset')}:{record.get('row_id')}")
    return [rng.gauss(0.0, 1.0) for _ in range(width)]


def rewrite(record: Any, sigma: float, rng: random.Random, seed: int, shared: float) -> Any:
    """The record with noisy probabilities and the answer they give (records without a probability row kept)."""
    prediction = record.get("prediction")
    if not (isinstance(prediction, list) and prediction and all(isinstance(p, (int, float)) for p in prediction)):
        return record
    row = noisy([float(p) for p in prediction], sigma, rng, item_draw(seed, record, len(prediction)), shared)
    return dict(record, prediction=row, predicted=max(range(len(row)), key=row.__getitem__))


def part_results(document: Dict[str, Any], part: Any) -> Dict[str, Any]:
    """The results object of one sub-benchmark (a compound one's part) inside a results document."""
    if part.compound:
        name, key = part.compound
        return document["benchmarks"][name]["results"][key]
    return document["benchmarks"][part.name]["results"]


def recomputed(document: Dict[str, Any], directory: str) -> Dict[str, Any]:
    """``document`` (the results.json of the run in ``directory``, whose records were rewritten) with every number
    its records give recomputed from them: each dataset's metrics (a slope's per-pass values, its slope and its
    intercept: the standard's least-squares line through the passes), then each sub-benchmark's averaged row by
    the spec table's averaging rule.  A value the records give as not finite is refused (the noise keeps rows
    finite)."""
    from StaICC.numeric import linear_regression
    from StaICC.report.runs import load_run
    from StaICC.spec import SPECS
    from StaICC.stats.bootstrap import dataset_statistic
    from StaICC.subbenchmarks.averaging import AVERAGING
    run = load_run(directory)
    for part in run.parts.values():
        results = part_results(document, part)
        divided = results["Divided results"]
        for dataset in part.datasets():
            statistic = dataset_statistic(part, dataset, check=False)
            _store(divided[dataset], statistic, linear_regression)
        spec = SPECS.get(part.name)
        if spec is not None and divided:
            averaged = AVERAGING[spec.averaging](divided, len(divided))
            results["Averaged results"].update({n: v for n, v in averaged.items() if n in results["Averaged results"]})
    return document


def _store(result: Dict[str, Any], statistic: Any, linear_regression: Any) -> None:
    """One dataset's recomputed numbers written where its result object holds them."""
    point = statistic.point()
    if statistic.x_values is not None:  # a slope: the per-pass values, then (slope, intercept) through them
        passes = [statistic._pass_values(statistic.table.identity(), [p], statistic.fast)
                  for p in range(statistic.table.passes)]
        for p, values in enumerate(passes):
            result[str(p)].update({n: _finite(v) for n, v in values.items() if n in result[str(p)]})
        for name in result["sensitivity"]:
            line = linear_regression(statistic.x_values, [values[name] for values in passes])
            if line[0] != point[name]:
                raise ValueError(f"{name}: the slope through the passes, {line[0]!r}, is not the statistic's {point[name]!r}")
            result["sensitivity"][name] = [_finite(line[0]), _finite(line[1])]
        return
    held = result.get("sensitivity", result)
    held.update({n: _finite(v) for n, v in point.items() if n in held})


def _finite(value: Any) -> Any:
    """A recomputed value, refused where it is not finite (a noisy run's numbers all are)."""
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
        raise ValueError(f"a recomputed value is not finite: {value!r}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="the target's full run directory (with records)")
    parser.add_argument("--out", required=True, help="the noisy run's directory (created; must not exist)")
    parser.add_argument("--sigma", type=float, required=True, help="the noise's standard deviation on the log scale")
    parser.add_argument("--seed", type=int, default=0, help="the noise's seed (default: 0)")
    parser.add_argument("--shared", type=float, default=0.0,
                        help="the share of the noise's variance drawn once per test item, the same in every prompt "
                             "of it (default: 0, every record its own noise)")
    args = parser.parse_args()
    if not (math.isfinite(args.sigma) and args.sigma >= 0):
        parser.error(f"--sigma must be a finite number >= 0, got {args.sigma}")
    if not 0 <= args.shared <= 1:
        parser.error(f"--shared must be in [0, 1], got {args.shared}")
    os.makedirs(args.out)
    with open(os.path.join(args.target, "results.json"), encoding="utf-8") as fh:
        document = json.load(fh)
    document.pop("samples_columns", None)  # the compact copy of the target's records would not match these
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(document, fh)
    rng = random.Random(args.seed)
    with open(os.path.join(args.target, document["samples"]), encoding="utf-8") as source, \
            open(os.path.join(args.out, document["samples"]), "w", encoding="utf-8") as sink:
        for line in source:
            sink.write(json.dumps(rewrite(json.loads(line), args.sigma, rng, args.seed, args.shared)) + "\n")
    document = recomputed(document, args.out)  # the numbers these records give
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(document, fh)
    print(f"wrote {args.out} (sigma {args.sigma}, shared {args.shared}, seed {args.seed})")


if __name__ == "__main__":
    main()
