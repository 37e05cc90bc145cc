"""``staicc run --model hf`` on a tiny random Llama saved to disk equals calling the scorer directly."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")

from backend_helpers import save_tiny  # noqa: E402

from StaICC import Normal  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402

ROOT = str(REPO_ROOT)


def test_run_hf_from_one_command_equals_the_scorer(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from StaICC.prefabricate_inference.fast_kernel import CausalLMScorer
    model_dir = save_tiny(str(tmp_path / "tiny-llama"))
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "hf", "--model-args",
                           f"pretrained={model_dir},requests_per_call=1024", "--benchmarks", "Normal", "--datasets", "0", "1",
                           "--output-dir", str(out), "--log-samples", "--progress"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Normal GLUE-SST2" in done.stderr and "Normal rotten_tomatoes" in done.stderr  # a bar per dataset
    assert "prompt/s" in done.stderr
    document = json.loads((out / "results.json").read_text())
    provenance = document["provenance"]
    assert provenance["model"]["backend"] == "hf"
    assert provenance["model"]["identity"]["model"] == model_dir
    assert provenance["model"]["arguments"] == {"pretrained": model_dir, "requests_per_call": "1024"}
    assert {"torch", "transformers"} <= set(provenance["packages"])
    numerics = provenance["numerics"]  # what can move a last bit, and the exact-sum branch of every pass
    assert numerics["answers"]["backend"] == "hf" and numerics["answers"]["prediction_kind"] == "probabilities"
    assert numerics["answers"]["packing"] == "prefix" and numerics["answers"]["switched_off"] == []
    assert numerics["answers"]["requests_per_call"] == 1024 and numerics["answers"]["dtype"] == "float32"
    assert numerics["answers"]["device"].startswith("cpu") and numerics["answers"]["threads"] == 1
    assert set(numerics["answers"]["packages"]) == {"torch", "transformers"}
    assert numerics["route"] == {"kind": "one process"}
    assert numerics["exact_sum"]["branches"] == {"Normal": {"GLUE-SST2": ["softmax"], "rotten_tomatoes": ["softmax"]}}
    assert len((out / "samples.jsonl").read_text().splitlines()) == 2 * 1024

    # One backend call per pass, as a batched function receives it: the scorer forms the same
    # length-sorted batches, so the numbers are equal to the last bit.  The run reports the likelihood
    # and ECE on the model's own distribution beside the standard's; the hf backend's rows take the
    # softmax branch of the exact-sum rule, which the function's full-size passes take too.
    from StaICC.metrics import normal_metrics, with_own_distribution_metrics
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    direct = Normal(datasets=[0, 1], metrics=with_own_distribution_metrics(normal_metrics()))(
        CausalLMScorer(model, tokenizer, numerics="invariant"), batched_inference=True, prediction_kind="probabilities")
    assert document["benchmarks"]["Normal"]["results"] == json.loads(json.dumps(dict(direct)))
