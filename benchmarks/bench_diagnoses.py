"""Time the diagnoses outside the standard and the OpenICL retrievers, with the built-in lexical model.

Usage:  python benchmarks/bench_diagnoses.py [--datasets rotten_tomatoes TREC] [--queries 128]

Prints, measured in this run: Order_sens and Format_spread (full size, the lexical
reference model) per dataset with their numbers; Vote-k, DPP and MDL choosing 4
demonstrations for ``--queries`` test queries over the dataset's demonstration set
(the reference embedder, ``backend="numpy"``); the calibration metrics on Normal's rows.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from StaICC import Normal  # noqa: E402
from StaICC.backends.reference_model import lexical_icl  # noqa: E402
from StaICC.metrics import CALIBRATION_METRICS, METRICS  # noqa: E402
from StaICC.retrieval import DPPRetriever, MDLRetriever, VoteKRetriever  # noqa: E402
from StaICC.subbenchmarks.extensions import Format_spread, Order_sens  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["rotten_tomatoes", "TREC"])
    parser.add_argument("--queries", type=int, default=128)
    args = parser.parse_args()
    for cls in (Order_sens, Format_spread):
        bench = cls(datasets=args.datasets)
        started, cpu = time.perf_counter(), time.process_time()
        result = bench(lexical_icl)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        prompts = sum(len(e.prompt_set()) for e in bench)
        print(f"{cls.__name__}: {prompts} prompts in {seconds:.2f} s ({cpu:.2f} s of CPU)")
        for dataset, values in result["Divided results"].items():
            print(f"  {dataset}: " + ", ".join(f"{k} {v:.4f}" for k, v in values["sensitivity"].items()))
    normal = Normal(datasets=args.datasets)
    for experimentor in normal:
        demos, queries = experimentor.demonstration_set(), list(experimentor.test_set())[:args.queries]
        for retriever in (VoteKRetriever(backend="numpy"), DPPRetriever(backend="numpy"),
                          MDLRetriever(lexical_icl, backend="numpy")):
            started, cpu = time.perf_counter(), time.process_time()
            retriever.build_sampler(demos, queries, 4)
            print(f"{type(retriever).__name__} {experimentor.dataset_name}: {len(queries)} queries over "
                  f"{len(demos)} demonstrations in {time.perf_counter() - started:.2f} s "
                  f"({time.process_time() - cpu:.2f} s of CPU)")
        result, _, outputs = experimentor.auto_run(lexical_icl, return_outputs=True)
        started = time.perf_counter()
        values = {n: METRICS[n].function(outputs["groundtruth"], outputs["prob."]) for n in CALIBRATION_METRICS}
        print(f"calibration metrics, Normal {experimentor.dataset_name} ({len(outputs['prob.'])} rows, "
              f"{time.perf_counter() - started:.2f} s): " + ", ".join(f"{k} {v:.4f}" for k, v in values.items()))


if __name__ == "__main__":
    main()
