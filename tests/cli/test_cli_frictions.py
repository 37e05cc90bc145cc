"""Mistakes a newcomer makes, each one line and exit status 2 with a hint: other tools' spellings, names in the
wrong case or under another tool's name, misspelt commands, a wrong file given where a cache is expected."""
import sqlite3

import pytest

from StaICC import cli
from StaICC.cli import COMMANDS
from StaICC.retrieval import RETRIEVERS
from StaICC.validation import closest_name


def error_of(argv, capsys):
    """``staicc ARGV``'s one error line; the exit status must be 2 (an argument error, before any work)."""
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("staicc: error: "), (code, err)
    return err.strip()


@pytest.mark.parametrize("argv, hint", [
    (["run", "--model_args", "pretrained=x"], "; did you mean --model-args?"),
    (["run", "--num_fewshot", "5"], "; did you mean --k N (demonstrations per query; the standard's is 4)?"),
    (["run", "--batch_size", "auto"], "; did you mean --batch-size N (requests per backend call)?"),
    (["run", "--batch-size", "auto"], "there is no 'auto')"),
    (["run", "--output_path", "out"], "; did you mean --output-dir DIR?"),
    (["run", "--log_samples"], "; did you mean --log-samples?"),
    (["run", "--include_path", "tasks"], "; did you mean --include-path?"),
    (["run", "--apply_chat_template"], "; did you mean --model-args apply_chat_template=true?"),
    (["run", "--seed", "1"], "(no seed option: the standard's generator is seeded with 42"),
    (["run", "--show_config"], "; did you mean --show-config?"),
    (["report", "a", "--output_path", "x"], "; did you mean --output PATH?"),  # report writes one file: --output
    (["compare", "a", "b", "--output_path", "x"], "; did you mean --output PATH?"),
    (["batch", "export", "-o", "x.jsonl", "--model_args", "x"], "; did you mean --model-args?"),
    (["--model_args", "x"], "; did you mean staicc run --model-args?"),  # no command: the main job's parser
    (["run", "--dry_run"], "; did you mean --dry-run?"),  # any option, with _ for -
])
def test_other_tools_spellings_get_the_staicc_option(argv, hint, capsys):
    assert hint in error_of(argv, capsys)


@pytest.mark.parametrize("argv, hint", [
    (["run", "--datasets", "sst2"], "hate_speech_18; did you mean 'GLUE-SST2'?"),
    (["run", "--datasets", "Trec"], "did you mean 'TREC'?"),
    (["run", "--tasks", "sst2"], "unknown task 'sst2'"),
    (["run", "--tasks", "ag_news"], "did you mean 'AGNews'?"),
    (["run", "--benchmarks", "normal"], "unknown sub-benchmark 'normal'; did you mean 'Normal'?"),
    (["run", "--benchmarks", "Normal,template_sens"], "did you mean 'Template_sens'?"),
    (["--benchmark", "normal"], "did you mean 'Normal'?"),
    (["rnu"], "unrecognized arguments: rnu; did you mean 'staicc run'?"),
    (["tasks", "lsit"], "did you mean 'list'?"),
    (["cache", "mrege", "a", "b"], "did you mean 'merge'?"),
])
def test_names_in_another_case_or_spelling_get_did_you_mean(argv, hint, capsys):
    assert hint in error_of(argv, capsys)


def test_a_wrong_file_where_a_cache_is_expected_is_an_argument_error_everywhere(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text('{"benchmarks": {}, "provenance": {}}', encoding="utf-8")
    merged = error_of(["cache", "merge", str(tmp_path / "out.sqlite"), str(results)], capsys)
    run = error_of(["run", "--cache", str(results)], capsys)
    assert "not a prediction cache" in merged and "not a prediction cache" in run
    assert not (tmp_path / "out.sqlite").exists()  # reported before any work
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(str(other)) as connection:
        connection.execute("CREATE TABLE t (x)")
    connection.close()
    assert "the input prediction cache" in error_of(["cache", "merge", str(tmp_path / "new.sqlite"), str(other)],
                                                    capsys)
    good = tmp_path / "good.sqlite"
    assert cli.main(["run", "--datasets", "TREC", "--limit", "10", "--cache", str(good)]) == 0
    capsys.readouterr()
    assert "the output prediction cache" in error_of(["cache", "merge", str(other), str(good)], capsys)


def test_staicc_help_names_every_command(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"staicc {'|'.join(COMMANDS)}" in text
    assert COMMANDS == ("run", "compare", "report", "tasks", "batch", "cache", "export", "verify")
    assert f"({', '.join(RETRIEVERS)})" in text and len(RETRIEVERS) >= 9  # the main job's --retriever names


def test_closest_name():
    names = ["GLUE-SST2", "SST5", "TREC", "AGNews", "tweet_eval_emotion", "tweet_eval_hate", "hate_speech_18"]
    assert closest_name("sst2", names) == "GLUE-SST2" and closest_name("sst-5", names) == "SST5"
    assert closest_name("ag_news", names) == "AGNews" and closest_name("trec", names) == "TREC"
    assert closest_name("emotion", names) == "tweet_eval_emotion"
    assert closest_name("hate", names) is None  # two names hold it: no guess
    assert closest_name("mnli", names) is None and closest_name("", names) is None
    assert closest_name("rnu", ["run", "report"], cutoff=0.6) == "run"


@pytest.mark.parametrize("command, listed", [("tasks", "list, show, validate or new"), ("cache", "merge"),
                                             ("batch", "export or import")])
def test_a_command_without_its_subcommand_names_them_in_one_line(command, listed, capsys):
    assert error_of([command], capsys) == (f"staicc: error: {command} needs a command: {listed} "
                                           f"(staicc {command} --help says what each does)")


def test_no_hint_names_an_option_the_command_lacks(capsys):
    """lm-eval's --num_fewshot is staicc run's --k; compare has no k (the runs chose it), so it gets no hint."""
    assert error_of(["compare", "a", "b", "--num_fewshot", "3"], capsys) == \
        "staicc: error: unrecognized arguments: --num_fewshot 3"


@pytest.mark.parametrize("argv, message", [
    (["report"], "staicc: error: the following arguments are required: RUN"),
    (["compare", "a", "b", "--format", "xls"], "staicc: error: argument --format: invalid choice: 'xls'"),
])
def test_report_and_compare_argument_errors_return_2_like_every_command(argv, message, capsys):
    assert error_of(argv, capsys).startswith(message)  # error_of: main returns 2, one line (no SystemExit)
