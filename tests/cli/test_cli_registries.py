"""Methods, retrievers, export formats and commands are entered in registries: a name is registered once,
and a new entry is used end to end, its help text where ``--help`` and docs/cli.md list the names.

The throwaway method below (every query's prediction made uniform) and the throwaway export format (a
CSV of each part's averaged numbers) are registered in the test, run through ``staicc run --methods``
and ``staicc export``, and unregistered.
"""
import csv
import json

import pytest

from StaICC.cli import main
from StaICC.cli.common import CLI_COMMANDS, COMMANDS
from StaICC.methods.builtin import METHODS, family, register_method
from StaICC.methods.protocol import Method
from StaICC.registry import Described, RegistryError
from StaICC.results.exchange import EXPORT_FORMATS, ExportFormat
from StaICC.retrieval import RETRIEVERS, retriever_from_name


def uniformised() -> Method:
    """Every query's label probabilities replaced by the uniform row: its argmax is the first label."""
    def apply(_state, answers):
        return [[1.0 / len(row)] * len(row) for row in answers["labels"]]
    return Method("uniformised", "every prediction made uniform", train=lambda data, answers: None, apply=apply)


def averaged_csv(run, output, _intervals, options):
    """A throwaway export format: ``part,metric,value`` for each number a part averages."""
    path = f"{output}/averaged.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["part", "metric", "value", options["organization"]])
        for name, part in run.parts.items():
            writer.writerows([name, metric, repr(value)] for metric, value in part.averaged.items()
                             if isinstance(value, float))
    return [path]


@pytest.fixture
def throwaway_method():
    register_method("uniformised", uniformised, family="throwaway")
    yield "uniformised"
    METHODS.unregister("uniformised")


@pytest.fixture
def throwaway_format():
    EXPORT_FORMATS.register("averaged-csv", averaged_csv, info=ExportFormat("averaged CSV", "each part's averages"))
    yield "averaged-csv"
    EXPORT_FORMATS.unregister("averaged-csv")


@pytest.mark.parametrize("registry, name, entry", [
    (METHODS, "contextual", uniformised), (RETRIEVERS, "bm25", object), (EXPORT_FORMATS, "eee", averaged_csv),
    (CLI_COMMANDS, "run", "StaICC.cli.run:add_run_parser")])
def test_a_name_is_registered_once(registry, name, entry):
    before = registry.entry(name)
    with pytest.raises(RegistryError, match=f"a {registry.kind} named '{name}' is already registered"):
        registry.register(name, entry)
    assert registry.entry(name) is before


def test_the_names_are_listed_in_registration_order_with_their_help():
    assert tuple(CLI_COMMANDS.names()) == COMMANDS and CLI_COMMANDS.helps()["cache"] == \
        "prediction-cache tools: merge shard caches"
    assert list(RETRIEVERS)[:3] == ["zero", "fixk", "random"] and RETRIEVERS.helps()["topk"] == "bm25's other name"
    assert list(METHODS)[:2] == ["vanilla", "noisy_channel"] and family("pmi") == "prompting"
    assert METHODS.info("contextual").help == METHODS.get("contextual")().description
    with pytest.raises(ValueError, match="unknown retriever 'bm26'; valid names: zero, fixk, random, bm25"):
        retriever_from_name("bm26")


def test_a_throwaway_method_runs_end_to_end(throwaway_method, tmp_path, capsys):
    pytest.importorskip("numpy", reason="the tests against vanilla need numpy (pip install \"StaICC[methods]\")")
    out = tmp_path / "run"
    assert main(["run", "--methods", f"vanilla,{throwaway_method}", "--datasets", "TREC", "--limit", "12",
                 "--resamples", "20", "--log-samples", "--output-dir", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert any(line.split()[:2] == ["throwaway", throwaway_method] for line in text.splitlines()), text
    labels = [json.loads(line)["label"] for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
              if json.loads(line)["benchmark"] == "Normal"]
    mine = json.loads((out / "methods" / throwaway_method / "results.json").read_text(encoding="utf-8"))
    # a uniform row's argmax is the first label: the accuracy is the share of label 0, counted here
    assert mine["benchmarks"]["Normal"]["results"]["Averaged results"]["accuracy"] == \
        pytest.approx(labels.count(0) / len(labels))
    assert mine["provenance"]["method"]["name"] == throwaway_method


def test_a_throwaway_export_format_runs_end_to_end(throwaway_format, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["run", "--benchmarks", "Normal,Triplet_bias", "--datasets", "TREC", "--limit", "8",
                 "--output-dir", str(run), "--no-progress"]) == 0
    out = tmp_path / "export"
    out.mkdir()
    assert main(["export", str(run), "--format", throwaway_format, "-o", str(out), "--organization", "me"]) == 0
    assert f"wrote {out}/averaged.csv" in capsys.readouterr().out
    rows = list(csv.reader((out / "averaged.csv").open(encoding="utf-8")))
    assert rows[0] == ["part", "metric", "value", "me"]
    written = json.loads((run / "results.json").read_text(encoding="utf-8"))["benchmarks"]
    expected = {("Normal", m): v for m, v in written["Normal"]["results"]["Averaged results"].items()}
    expected.update({("Post_bias", m): v for m, v in
                     written["Triplet_bias"]["results"]["post"]["Averaged results"].items()})
    found = {(part, metric): float(value) for part, metric, value in rows[1:]}
    assert all(found[key] == value for key, value in expected.items() if isinstance(value, float))
    assert {part for part, _ in found} == {"Normal", "Contextual_bias", "Domain_bias", "Post_bias"}
    assert ("Normal", "accuracy") in found


def test_export_lists_the_registered_formats(throwaway_format, capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "eee, hf, lm-eval or averaged-csv" in text
    assert main(["export", "x", "--format", "nope", "-o", "y"]) == 2
    line = capsys.readouterr().err.strip()
    assert len(line.splitlines()) == 1 and "nope" in line


def test_every_command_help_is_the_registrys():
    import argparse

    from StaICC.cli import full_parser
    sub = next(a for a in full_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {action.dest: action.help for action in sub._choices_actions}
    assert helps["export"] == "write a run as Every Eval Ever, Hugging Face .eval_results or lm-eval files"
    assert {name: helps[name] for name in COMMANDS if name != "export"} == \
        {name: text for name, text in CLI_COMMANDS.helps().items() if name != "export"}
    assert isinstance(CLI_COMMANDS.info("run"), Described)
