"""staicc run: --show-config, --write-out, --log-samples=full, retriever options of every type."""
import json
import os

from StaICC.cli import main
from StaICC.cli.common import number_or_text


def test_retriever_options_of_every_type():
    assert number_or_text("true") is True and number_or_text("False") is False
    assert number_or_text("1;5;9") == [1, 5, 9] and number_or_text("3") == 3 and number_or_text("0.5") == 0.5
    assert number_or_text("bm25") == "bm25"


def test_fixk_and_boolean_options_from_the_command_line(capsys):
    assert main(["run", "--datasets", "0", "--limit", "10", "--no-progress",
                 "--retriever", "fixk:fix_id_list=1;5;9;11"]) == 0
    assert "the FixK retriever (fix_id_list=[1, 5, 9, 11], dedup=true)" in capsys.readouterr().out
    assert main(["run", "--datasets", "0", "--limit", "10", "--no-progress", "--retriever", "random:balanced=true"]) == 0
    assert "balanced=true" in capsys.readouterr().out


def test_show_config_write_out_and_full_samples(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["run", "--datasets", "TREC", "--limit", "10", "--no-progress", "--show-config", "--write-out", "2",
                 "--output-dir", out, "--log-samples=full"]) == 0
    text = capsys.readouterr().out
    config = json.loads(text[text.index("{"):text.index("\n}") + 2])
    assert config["benchmarks"] == {"Normal": {"Normal": ["TREC"]}} and config["k"] == 4
    assert config["identity"] == {"backend": "reference", "model": "lexical", "version": 1}
    assert config["requests_per_call"] == 256 and "batch_size" not in config  # the reference backend's own
    assert text.count("===== Normal / TREC: prompt ") == 2 and "question:" in text
    with open(os.path.join(out, "samples.jsonl"), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert len(records) == 20 and all(r["prompt"].startswith("question:") for r in records)
    assert main(["run", "--datasets", "TREC", "--write-out", "-1"]) == 2


def test_show_config_names_the_requests_per_call_the_run_uses(capsys):
    assert main(["run", "--datasets", "TREC", "--limit", "10", "--no-progress", "--show-config",
                 "--batch-size", "8"]) == 0
    text = capsys.readouterr().out
    assert json.loads(text[text.index("{"):text.index("\n}") + 2])["requests_per_call"] == 8
