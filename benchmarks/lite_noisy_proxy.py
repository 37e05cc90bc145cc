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

    python benchmarks/lite_noisy_proxy.py --target RUNS/target --out /tmp/noisy/s050 --sigma 0.5
"""
import argparse
import json
import math
import os
import random
from typing import Any, List


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
    print(f"wrote {args.out} (sigma {args.sigma}, shared {args.shared}, seed {args.seed})")


if __name__ == "__main__":
    main()
