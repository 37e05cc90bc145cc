"""Predictions made elsewhere: export the prompts, score them offline, hand the predictions back.

Typical use: the prompts go to a batch job (a cluster, an API); its predictions come back
as a file; StaICC computes the standard metrics from them.
"""
import json
import os
import tempfile

from StaICC import Normal
from StaICC.backends.reference_model import lexical_icl

benchmark = Normal(datasets=["rotten_tomatoes", "TREC"])
folder = tempfile.mkdtemp()

# 1. Export every dataset's prompts in the order StaICC expects the predictions.
for experimentor in benchmark:
    with open(os.path.join(folder, experimentor.dataset_name + ".prompts.jsonl"), "w", encoding="utf-8") as fh:
        for prompt in experimentor.prompt_set():
            fh.write(json.dumps({"prompt": prompt, "label_space": experimentor.get_label_space()}) + "\n")

# 2. "Elsewhere": score the prompts (here with the built-in model) and save int labels or vectors.
for experimentor in benchmark:
    name = experimentor.dataset_name
    with open(os.path.join(folder, name + ".prompts.jsonl"), encoding="utf-8") as src, \
            open(os.path.join(folder, name + ".predictions.json"), "w", encoding="utf-8") as out:
        rows = [json.loads(line) for line in src]
        json.dump([lexical_icl(r["prompt"], r["label_space"]) for r in rows], out)

# 3. Hand the predictions back: one list per dataset, aligned with prompt_set().
predictions = {}
for experimentor in benchmark:
    with open(os.path.join(folder, experimentor.dataset_name + ".predictions.json"), encoding="utf-8") as fh:
        predictions[experimentor.dataset_name] = json.load(fh)
offline = benchmark(preentered_predictions=predictions)
live = benchmark(lexical_icl)
print(json.dumps(offline["Averaged results"], indent=1))
print("offline == live:", offline == live)
