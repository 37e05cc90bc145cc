"""Diagnose an inference function: bias, label-noise, template and demonstration sensitivity.

Runs every StaICC-Diag sub-benchmark on two datasets with the built-in lexical model
and prints one table per diagnosis.  Each one is described in docs/standard.md.
"""
import time

from StaICC import GLER, Demo_sens, Template_sens, Triplet_bias
from StaICC.backends.reference_model import lexical_icl
from StaICC.report import format_table

DATASETS = ["rotten_tomatoes", "TREC"]

for name, benchmark in [("Triplet_bias", Triplet_bias(datasets=DATASETS)),
                        ("GLER", GLER(datasets=DATASETS)),
                        ("Template_sens", Template_sens(datasets=DATASETS)),
                        ("Demo_sens", Demo_sens(datasets=DATASETS))]:
    started = time.perf_counter()
    result = benchmark(lexical_icl)
    seconds = time.perf_counter() - started
    parts = result.items() if name == "Triplet_bias" else [(name, result)]
    for part_name, part in parts:
        print(format_table(part, f"{part_name} ({seconds:.2f} s)"))
        print()
