#!/usr/bin/env python3
"""lm-evaluation-harness's log-likelihoods handed back to StaICC: the ``hf`` backend's numbers, or a notice.

One tiny random Llama (the route matrix's: ``tests/route_matrix.py``), Normal on rotten_tomatoes and TREC
(every prompt, or the first ``--limit`` test items).  lm-eval's ``HFLM.loglikelihood`` scores
log p(label | prompt) with the label as a continuation of the prompt, which is the ``hf`` backend's
``scoring=sequence``.  Printed, from one run:

* how close lm-eval's log-likelihoods are to the backend's (max |Δ log p| after removing each prompt's
  normaliser, i.e. between their softmaxes, and argmax agreement);
* the largest difference per metric between ``staicc``'s ``hf`` run and the same log-likelihoods handed back
  as ``preentered_predictions``, without and with ``prediction_kind="loglikelihoods"``, and the notice line
  the first prints.

Skips (exit status 0, one line) when lm-eval is not installed: ``pip install lm-eval==0.4.13``.

    python benchmarks/lm_eval_handback.py [--limit N] [--batch-size 32]
"""
import argparse
import math
import os
import shutil
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

DATASETS = ("rotten_tomatoes", "TREC")
METRICS = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1")


def lm_eval_loglikelihoods(model, tokenizer, prompts, labels, batch_size):
    """Per prompt, lm-eval's log p(label | prompt) for each label (HFLM.loglikelihood, in one call)."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, device="cpu",
              add_bos_token=bool(tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id))
    pairs = [(p, label) for p in prompts for label in labels]
    requests = [Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=i) for i, pair in enumerate(pairs)]
    results = lm.loglikelihood(requests, disable_tqdm=True)
    n = len(labels)
    return [[float(results[q * n + j][0]) for j in range(n)] for q in range(len(prompts))]


def centred(row):
    """log-probabilities with the log-sum-exp removed: equal for two rows with the same softmax."""
    top = max(row)
    total = math.log(sum(math.exp(v - top) for v in row)) + top
    return [v - total for v in row]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N test items per dataset (0: every prompt)")
    parser.add_argument("--batch-size", type=int, default=32, help="HFLM batch size")
    args = parser.parse_args()
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        print("lm-eval is not installed: pip install lm-eval==0.4.13 (nothing measured)")
        return 0
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from route_matrix import make_model

    from StaICC import Normal
    from StaICC.backends.registry import make_backend
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()
    scratch = tempfile.mkdtemp(prefix="staicc-lm-eval-")
    try:
        model_dir = make_model(os.path.join(scratch, "model"))
        model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        bench = Normal(datasets=list(DATASETS))
        if args.limit:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bench.limit_test_items(args.limit)
        served = bench(make_backend("hf", pretrained=model_dir, scoring="sequence", threads=1), progress=False)
        rows = {}
        for record in served.records:
            rows.setdefault(record["dataset"], []).append(record["prediction"])
        handed = {e.dataset_name: lm_eval_loglikelihoods(model, tokenizer, e.prompt_set(), e.get_label_space(),
                                                         args.batch_size) for e in bench}
        worst_log, same, total = 0.0, 0, 0
        for dataset, logs in handed.items():
            for log, row in zip(logs, rows[dataset]):
                worst_log = max(worst_log, max(abs(a - math.log(b)) for a, b in zip(centred(log), row)))
                same += max(range(len(log)), key=log.__getitem__) == max(range(len(row)), key=row.__getitem__)
                total += 1
        print(f"lm-eval {lm_eval.__version__} HFLM.loglikelihood vs staicc hf backend (scoring=sequence), "
              f"transformers {transformers.__version__}, {total} prompts: max |Δ log p| {worst_log:.2e}, "
              f"same argmax {same}/{total}\n")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plain = bench(preentered_predictions=handed, progress=False)
        notices = [str(w.message) for w in caught if "NUMERICS" in str(w.message)]
        declared = bench(preentered_predictions=handed, prediction_kind="loglikelihoods", progress=False)
        print("| handed back as | " + " | ".join(METRICS) + " |")
        print("|---|" + "---|" * len(METRICS))
        for name, result in (("preentered_predictions", plain),
                             ("... with prediction_kind='loglikelihoods'", declared)):
            gaps = [max(abs(result["Divided results"][d][m] - served["Divided results"][d][m]) for d in DATASETS)
                    for m in METRICS]
            print(f"| {name} | " + " | ".join(f"{g:.2e}" for g in gaps) + " |")
        print("\nlargest difference from the hf run over the datasets; the first prints:")
        for line in notices:
            print(f"  {line}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
