"""The main job and the stdlib-only promise, run as a user would."""
import json
import os
import subprocess
import sys
from conftest import REPO_ROOT

ROOT = str(REPO_ROOT)


def run(*args, check=True):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=check)


def test_main_job_prints_a_table(tmp_path):
    out = tmp_path / "out.json"
    done = run("-m", "StaICC", "--datasets", "rotten_tomatoes", "2", "--json", str(out))
    lines = done.stdout.splitlines()
    assert lines[0] == "Normal (k=4, model=lexical)"
    assert lines[1].split() == ["dataset", "accuracy", "averaged_truelabel_likelihood", "macro_F1",
                                "expected_calibration_error_1"]
    assert [line.split()[0] for line in lines[3:7]] == ["rotten_tomatoes", "financial_phrasebank", "-" * 20, "Averaged"]
    assert done.stderr == ""  # no stray prints, no warnings
    data = json.loads(out.read_text())
    assert data["metadata"]["standard"] is True
    assert set(data["results"]["Divided results"]) == {"rotten_tomatoes", "financial_phrasebank"}


def test_main_job_errors_are_one_clear_line():
    done = run("-m", "StaICC", "--datasets", "nope", check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("staicc: error: unknown dataset 'nope'")


def test_other_benchmarks_and_k():
    done = run("-m", "StaICC", "--benchmark", "Demo_sens", "--k", "2", "--datasets", "TREC")
    assert "Demo_sens (k=2, model=lexical)" in done.stdout and "consistency" in done.stdout


def test_import_uses_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import StaICC, StaICC.cli, StaICC.backends.reference_model, "
            "StaICC.retrieval; from StaICC import Normal; Normal(datasets=[0]); "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "stdlib = set(sys.stdlib_module_names) if hasattr(sys, 'stdlib_module_names') else None; "
            "print(sorted(new - stdlib - {'StaICC'}) if stdlib else sorted(new & {'numpy', 'torch', 'transformers', 'tqdm'}))")
    assert run("-c", code).stdout.strip() == "[]"


def test_original_import_paths_still_work():
    code = ("from StaICC import Normal, Triplet_bias, Contextual_bias, Domain_bias, Post_bias, GLER, Template_sens, Demo_sens\n"
            "from StaICC.normal import Normal as N2\n"
            "from StaICC.diagnosis import GLER as G2, Triplet_bias as T2\n"
            "from StaICC.util.experimentor import single_experimentor\n"
            "from StaICC.util.dataset_interface import triplet_dataset, demonstration_sampler, prompt_writter, basic_datasets_loader\n"
            "from StaICC.util import functional, stable_random, hgf_dataset_loader, configs\n"
            "assert N2 is Normal and G2 is GLER and T2 is Triplet_bias\n"
            "data = hgf_dataset_loader.rotten_tomatoes()\n"
            "e = single_experimentor(original_dataset=data)\n"
            "assert isinstance(e.prompt_former, prompt_writter) and isinstance(e.triplet_dataset, triplet_dataset)\n"
            "assert Normal(datasets=[hgf_dataset_loader.rotten_tomatoes])[0].prompt_set()[0] == e.prompt_set()[0]\n"
            "assert functional.softmax([0.0, 0.0]) == [0.5, 0.5] and stable_random.stable_random().next_float() == 0.2523451747838408\n"
            "print('ok')")
    assert run("-c", code).stdout.strip() == "ok"
