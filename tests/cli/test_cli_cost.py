"""``staicc run --dry-run``'s cost estimate as a user reads it: the printed tokens are the tokens the real run's
model computes (and records), the FLOP bound and the money follow from them and the model's own shape by the
stated formulas, and every bad option is a one-line argument error before anything runs."""
import json
import os
import re

import pytest

from StaICC.cli import main
from StaICC.cli.cost import duration

COMMON = ["--benchmarks", "Normal", "--datasets", "TREC", "--lite-items", "5", "--no-progress"]


def number(text):
    return int(text.replace(",", ""))


def test_the_dry_runs_tokens_flops_and_money_are_what_the_run_computes(tmp_path, capsys):
    pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
    pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
    from backend_helpers import save_tiny, tiny_pair
    model_dir = save_tiny(str(tmp_path / "tiny"))
    hf = ["run", "--model", "hf", "--model-args", f"pretrained={model_dir},device=cpu", *COMMON]
    assert main([*hf, "--dry-run", "--device-flops", "2e12", "--price-per-mtok", "100,300"]) == 0
    dry = capsys.readouterr().out
    given, shared, reads = map(number, re.search(
        r"tokens \(the model's tokenizer\): ([\d,]+) given, ([\d,]+) after prefix sharing; ([\d,]+) read positions",
        dry).groups())
    out = str(tmp_path / "run")
    assert main([*hf, "--output-dir", out]) == 0
    ran = capsys.readouterr().out
    with open(os.path.join(out, "results.json"), encoding="utf-8") as fh:
        usage = json.load(fh)["provenance"]["usage"]
    assert (usage["tokens"], usage["tokens_after_sharing"], usage["reads"]) == (given, shared, reads)
    assert f"tokens computed: {given:,} given, {shared:,} after prefix sharing; {reads:,} read positions" in ran
    model, _ = tiny_pair()
    nonembedding = sum(p.numel() for name, p in model.named_parameters()
                       if "embed_tokens" not in name and "lm_head" not in name)
    hidden, vocab = model.config.hidden_size, model.get_output_embeddings().weight.shape[0]
    seconds = (2 * nonembedding * shared + 2 * hidden * vocab * reads) / 2e12
    assert (f"FLOP bound on 2 TFLOP/s: {seconds:.2g} s (2 x {nonembedding:,} non-embedding parameters x {shared:,} "
            f"tokens + 2 x {hidden} x {vocab:,} vocabulary x {reads:,} read positions") in dry
    assert f"${given * 100 / 1e6:,.2f} for {given:,} input tokens at $100/M" in dry
    assert "for 0 output tokens at $300/M" in dry  # scoring reads positions; it generates nothing


def test_without_a_tokenizer_the_money_is_stated_as_an_approximation(capsys):
    pytest.importorskip("numpy", reason="a lite dry run's estimates need numpy (pip install \"StaICC[stats]\")")
    assert main(["run", "--model", "reference", *COMMON, "--dry-run", "--price-per-mtok", "1"]) == 0
    out = capsys.readouterr().out
    tokens = number(re.search(r"tokens \(approximated as characters / 4[^)]*\): ([\d,]+) given", out).group(1))
    assert tokens > 0 and "after prefix sharing: needs the model's tokenizer" in out
    assert f"money: ${tokens / 1e6:,.2f} (" in out and "; tokens approximated)" in out


@pytest.mark.parametrize("seconds, text", [(0.000123, "0.00012 s"), (0.5, "0.5 s"), (42.25, "42.2 s"),
                                           (150, "150 s (2.5 min)"), (7200, "7,200 s (2.0 h)")])
def test_durations_read_as_people_read_them(seconds, text):
    assert duration(seconds) == text


@pytest.mark.parametrize("arguments, words", [
    (["--device-peak", "h100"], "--device-peak estimates what a run would cost; it needs --dry-run"),
    (["--price-per-mtok", "1"], "--price-per-mtok estimates what a run would cost; it needs --dry-run"),
    (["--dry-run", "--device-peak", "h1OO"], "--device-peak: unknown device 'h1OO'"),
    (["--dry-run", "--device-flops", "0"], "--device-flops must be a number of FLOP/s"),
    (["--dry-run", "--device-flops", "1e12", "--device-peak", "h100"], "give one"),
    (["--dry-run", "--price-per-mtok", "-1"], "--price-per-mtok must be dollars per million tokens"),
    (["--dry-run", "--price-per-mtok", "1,2,3"], "--price-per-mtok is IN or IN,OUT"),
    (["--dry-run", "--device-flops", "1e12"], "the FLOP bound needs the model's parameters"),
])
def test_cost_option_errors_are_one_line_before_anything_runs(tmp_path, capsys, arguments, words):
    out = tmp_path / "run"
    assert main(["run", "--model", "reference", *COMMON, *arguments, "--output-dir", str(out)]) == 2
    captured = capsys.readouterr()
    assert words in captured.err and captured.err.count("\n") == 1 and captured.out == "" and not out.exists()
