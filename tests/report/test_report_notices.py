"""Nothing hidden: unparsed generated answers and non-standard settings shown wherever results are shown."""
import json
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from backend_helpers import save_tiny  # noqa: E402
from StaICC.cli import main  # noqa: E402
from StaICC.report.notices import UNPARSED_LIMIT, model_label, notices  # noqa: E402


def test_notices_from_metadata():
    assert notices([{"standard": True, "non_standard_settings": {}, "unparsed_answers": {}}]) == []
    lines = notices([{"standard": False, "non_standard_settings": {"SST2": ["limited to the first 8 test items"]},
                      "unparsed_answers": {"SST2": 64}, "answer_counts": {"SST2": 64}}])
    assert lines[0] == "NOT STANDARD: limited to the first 8 test items"
    assert lines[1].startswith("UNPARSED: 64 of 64 generated answers (100.0%)") and "NOT MEANINGFUL" in lines[1]
    few = notices([{"unparsed_answers": {"a": 1}, "answer_counts": {"a": int(2 / UNPARSED_LIMIT)}}])
    assert few and "NOT MEANINGFUL" not in few[0]
    assert notices([{"unparsed_answers": {"a": 3}}]) == [
        "UNPARSED: 3 generated answers named no label and were scored by the unparsed policy"]


def test_model_label_is_the_model_not_the_folder():
    provenance = {"model": {"backend": "hf", "arguments": {"pretrained": "/models/x"},
                            "identity": {"backend": "hf", "model": "/models/x"}}}
    assert model_label(provenance, "run-folder") == "hf: x"  # a model folder by its name, not its path
    assert model_label({"model": {"backend": "reference", "identity": {"backend": "reference", "model": "lexical"}}},
                       "f") == "reference: lexical"
    assert model_label({}, "run-folder") == "run-folder"


@pytest.fixture(scope="module")
def generative_run(tmp_path_factory):
    """A generative run of a tiny random model: its answers name no label."""
    root = tmp_path_factory.mktemp("generative")
    model = save_tiny(str(root / "model"))
    out = str(root / "run")
    code = main(["run", "--model", "hf", "--model-args", f"pretrained={model},scoring=generate,max_new_tokens=2",
                 "--datasets", "0", "--limit", "16", "--output-dir", out, "--log-samples", "--no-progress"])
    assert code == 0
    return out


def test_unparsed_answers_shown_by_run_report_and_compare(generative_run, capsys):
    with open(os.path.join(generative_run, "results.json"), encoding="utf-8") as fh:
        metadata = json.load(fh)["benchmarks"]["Normal"]["metadata"]
    unparsed = sum(metadata["unparsed_answers"].values())
    assert unparsed > 0 and sum(metadata["answer_counts"].values()) == 32
    for argv in (["report", generative_run, "--format", "md", "--resamples", "5"],
                 ["report", generative_run, "--format", "latex", "--resamples", "5"],
                 ["compare", generative_run, generative_run, "--resamples", "5"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert f"UNPARSED: {unparsed} of 32 generated answers" in out, argv
        assert "NOT STANDARD" in out and "limited to the first 16 test items" in out


def test_unparsed_answers_on_the_html_page(generative_run, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    page = str(tmp_path / "r.html")
    assert main(["report", generative_run, "--html", page, "--resamples", "5"]) == 0
    text = open(page, encoding="utf-8").read()
    head = text[:text.index("<h2>")]
    assert 'class="banner"' in head and "UNPARSED" in head and "NOT STANDARD" in head
    assert "model hf: " in head


def test_output_dir_holding_a_run_needs_overwrite(tmp_path, capsys):
    out = str(tmp_path / "run")
    base = ["run", "--datasets", "0", "--limit", "5", "--no-progress", "--output-dir", out]
    assert main(base + ["--log-samples"]) == 0
    capsys.readouterr()
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds a run (results.json, samples.jsonl, samples.columns.json)" in err
    assert main(base + ["--overwrite"]) == 0
    assert sorted(os.listdir(out)) == ["results.json"]  # the old run's samples are gone with it
