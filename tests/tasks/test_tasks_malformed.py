"""Every malformed task file ends ``staicc run --tasks FILE`` in one line naming the file and the key
(or the data row), with exit status 2, before any model is built."""
import json
import os
import subprocess
import sys

import pytest

from StaICC import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ALTERNATES = """
[template.alternates]
instruction = ["", "Classify. ", "Sentiment? "]
input_text_prefixes = [["text: "], ["review: "], ["Text: "]]
label_prefix = ["Label: ", "label: ", "Sentiment: "]
label_affix = ["\\n", " ", "\\t"]
"""
#: a valid task over data.csv, the base most cases change one thing in
BASE = """name = "mine"
[data]
path = "data.csv"
input_columns = "text"
label_column = "label"
"""


def _csv(rows):
    return "text,label\n" + "".join(f"{text},{label}\n" for text, label in rows)


GOOD_ROWS = [(f"review number {i} is {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg") for i in range(40)]

# (case id, file name, file text, what the last line must name besides the file)
CASES = [
    ("unknown-top-key", "t.toml", 'nmae = "x"\n' + BASE, ["key 'nmae'", "did you mean 'name'"]),
    ("unknown-template-key", "t.toml", BASE + '[template]\nlabel_prefx = "a: "\n',
     ["key 'template.label_prefx'", "did you mean 'label_prefix'"]),
    ("unknown-data-key", "t.toml", BASE.replace("input_columns", "input_column"),
     ["key 'data.input_column'", "did you mean 'input_columns'"]),
    ("unknown-section", "t.toml", BASE + "[runs]\nk = 2\n", ["key 'runs'", "did you mean 'run'"]),
    ("missing-name", "t.toml", BASE.replace('name = "mine"\n', ""), ["key 'name'"]),
    ("name-not-string", "t.toml", BASE.replace('"mine"', "3"), ["key 'name'", "non-empty string"]),
    ("bad-source", "t.toml", BASE + 'source = "xls"\n', ["key 'data.source'", "csv"]),
    ("missing-data-file", "t.toml", BASE.replace("data.csv", "nowhere.csv"), ["key 'data.path'", "nowhere.csv"]),
    ("unknown-data-ending", "t.toml", BASE.replace("data.csv", "data.txt"), ["key 'data.source'"]),
    ("no-data", "t.toml", 'name = "mine"\n', ["key 'data'"]),
    ("no-input-columns", "t.toml", BASE.replace('input_columns = "text"\n', ""), ["key 'data.input_columns'"]),
    ("no-label-column", "t.toml", BASE.replace('label_column = "label"\n', ""), ["key 'data.label_column'"]),
    ("empty-input-columns", "t.toml", BASE.replace('"text"', "[]", 1), ["key 'data.input_columns'"]),
    ("column-not-in-header", "t.toml", BASE.replace('"text"', '"txt"', 1), ["line 1", "column 'txt'"]),
    ("label-outside-words", "t.toml", BASE + '[labels]\nwords = { neg = "bad", pos = "good" }\n',
     ["line 42", "column 'label'"]),
    ("empty-text-row", "t.toml", BASE, ["line 43", "column 'text'", "empty"]),
    ("malformed-jsonl-row", "t.toml", BASE.replace("data.csv", "data.jsonl"), ["line 3", "malformed JSON"]),
    ("words-not-list", "t.toml", BASE + '[labels]\nwords = "neg"\n', ["key 'labels.words'"]),
    ("words-duplicated", "t.toml", BASE + '[labels]\nwords = ["bad", "bad"]\n', ["key 'labels.words'"]),
    ("prefix-count", "t.toml", BASE + '[template]\ninput_text_prefixes = ["a: ", "b: "]\n',
     ["key 'template.input_text_prefixes'"]),
    ("label-prefix-number", "t.toml", BASE + "[template]\nlabel_prefix = 1\n", ["key 'template.label_prefix'"]),
    ("alternates-two-options", "t.toml", BASE + ALTERNATES.replace('["", "Classify. ", "Sentiment? "]', '["", "x"]'),
     ["key 'template.alternates.instruction'", "exactly 3"]),
    ("alternates-first-not-template", "t.toml", BASE + ALTERNATES.replace('["Label: ", "label', '["L: ", "label'),
     ["key 'template.alternates'", "label_prefix"]),
    ("alternates-missing-key", "t.toml", BASE + ALTERNATES.replace('label_affix = ["\\n", " ", "\\t"]\n', ""),
     ["key 'template.alternates.label_affix'"]),
    ("split-partial", "t.toml", BASE + "[split]\ncalibration = 5\ndemonstration = 10\n", ["key 'split.test'"]),
    ("split-too-large", "t.toml", BASE + "[split]\ncalibration = 20\ndemonstration = 20\ntest = 20\n",
     ["key 'split'", "only 40"]),
    ("split-negative", "t.toml", BASE + "[split]\ncalibration = 5\ndemonstration = 10\ntest = -1\n",
     ["key 'split.test'"]),
    ("k-negative", "t.toml", BASE + "[run]\nk = -2\n", ["key 'run.k'"]),
    ("k-above-demonstrations", "t.toml", BASE + "[run]\nk = 30\n", ["key 'run.k'", "24 rows"]),
    ("unknown-benchmark", "t.toml", BASE + '[run]\nbenchmarks = ["Nromal"]\n', ["key 'run.benchmarks'", "Nromal"]),
    ("unknown-retriever", "t.toml", BASE + '[run]\nretriever = "bm26"\n', ["key 'run.retriever'", "bm26"]),
    ("unknown-metric", "t.toml", BASE + '[run]\nmetrics = ["acuracy"]\n', ["key 'run.metrics'", "'accuracy'"]),
    ("bad-scoring", "t.toml", BASE + '[model]\nbackend = "hf"\nscoring = "last"\n',
     ["key 'model.scoring'", "last_token"]),
    ("model-without-backend", "t.toml", BASE + '[model]\nscoring = "sequence"\n', ["key 'model.backend'"]),
    ("template-sens-without-alternates", "t.toml", BASE + '[run]\nbenchmarks = "all"\n',
     ["key 'template.alternates'", "Template_sens"]),
    ("test-too-small-for-ece", "t.toml", BASE + "[split]\ncalibration = 5\ndemonstration = 10\ntest = 3\n",
     ["key 'split.test'", "ECE"]),
    ("unknown-standard-dataset", "t.toml", 'name = "x"\n[data]\nsource = "standard"\ndataset = "TRECC"\n',
     ["key 'data.dataset'", "did you mean 'TREC'"]),
    ("standard-split-changed", "t.toml",
     'name = "TREC"\n[data]\nsource = "standard"\ndataset = "TREC"\n[split]\ncalibration = 1\ndemonstration = 2\n'
     'test = 3\n', ["key 'split'", "(1024, 4096, 512)"]),
    ("standard-word-count", "t.toml", 'name = "TREC"\n[data]\ndataset = "TREC"\n[labels]\nwords = ["a", "b"]\n',
     ["key 'labels.words'", "6 labels"]),
    ("standard-with-path", "t.toml", 'name = "TREC"\n[data]\nsource = "standard"\npath = "x.csv"\n',
     ["key 'data.path'"]),
    ("custom-named-standard", "t.toml", BASE.replace('"mine"', '"TREC"'), ["key 'name'", "standard"]),
    ("delimiter-on-jsonl", "t.toml", BASE.replace("data.csv", "good.jsonl") + 'delimiter = ";"\n',
     ["key 'data.delimiter'"]),
    ("record-not-table", "t.json", json.dumps({"name": "mine", "data": {
        "records": [{"text": "a", "label": "x"}, "oops"], "input_columns": "text", "label_column": "label"}}),
     ["key 'data.records'", "record 1"]),
    ("deduplicated-too-few", "t.toml", BASE.replace("data.csv", "same.csv") + "deduplicate = true\n",
     ["key 'data.deduplicate'"]),
    ("malformed-toml", "t.toml", BASE + "[template\n", ["malformed TOML", "line"]),
    ("malformed-json", "t.json", '{"name": "mine",', ["malformed JSON", "line 1"]),
    ("malformed-yaml", "t.yaml", "name: [unclosed\n", ["malformed YAML", "line"]),
    ("yaml-top-level-list", "t.yaml", "- name\n", ["key '(top level)'", "table"]),
    ("wrong-ending", "t.txt", BASE, ["ending '.txt'"]),
    ("asset-without-config", "t.py", "def post_process(text):\n    return None\n", ["key 'config'"]),
    ("asset-with-prompt", "t.py", "def config():\n    return {}\n\ndef prompt(sample, examples):\n    return ''\n",
     ["key 'prompt'", "template"]),
    ("asset-config-raises", "t.py", "def config():\n    raise KeyError('label')\n", ["key 'config'", "KeyError"]),
    ("asset-score-not-dict", "t.py", "import os\n\ndef config():\n    return {'name': 'mine', 'data': {'path': "
     "'data.csv', 'input_columns': 'text', 'label_column': 'label'}}\n\ndef score(predictions, references):\n"
     "    return 0.5\n", ["key 'score'", "dict"]),
]


def _write_data(folder):
    (folder / "data.csv").write_text(_csv(GOOD_ROWS), encoding="utf-8")
    lines = [json.dumps({"text": t, "label": lab}) for t, lab in GOOD_ROWS[:2]] + ["{oops"]
    (folder / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "good.jsonl").write_text("\n".join(json.dumps({"text": t, "label": lab}) for t, lab in GOOD_ROWS) + "\n",
                                       encoding="utf-8")
    (folder / "same.csv").write_text(_csv([("the same text", "pos")] * 2 + [("another", "neg")] * 30),
                                     encoding="utf-8")


def _case_data(case_id, folder):
    if case_id == "label-outside-words":  # line 42 (after the header and 40 rows) has a label of neither word
        (folder / "data.csv").write_text(_csv(GOOD_ROWS + [("an odd one", "meh")]), encoding="utf-8")
    if case_id == "empty-text-row":
        (folder / "data.csv").write_text(_csv(GOOD_ROWS + [("fine text", "pos"), ("  ", "neg")]), encoding="utf-8")


@pytest.fixture
def no_model(monkeypatch):
    """A model built, or a prompt scored, fails the test: errors must come before either."""
    from StaICC.backends import registry

    def refuse(*_args, **_kwargs):
        raise AssertionError("a model was built before the task was fully checked")
    monkeypatch.setattr(registry, "make_backend", refuse)


@pytest.mark.parametrize("case_id,file_name,text,expected", CASES, ids=[c[0] for c in CASES])
def test_malformed_task_file_is_one_line_naming_file_and_key(case_id, file_name, text, expected, tmp_path, capsys,
                                                              no_model):
    pytest.importorskip("yaml") if file_name.endswith(".yaml") else None
    _write_data(tmp_path)
    _case_data(case_id, tmp_path)
    task = tmp_path / file_name
    task.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code = cli.main(["run", "--tasks", str(task), "--output-dir", str(out)])
    captured = capsys.readouterr()
    assert code == 2, captured
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("staicc: error: ")
    assert str(task) in lines[0] or repr(str(task)) in lines[0], lines[0]
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert not (out / "results.json").exists()


def test_enough_malformed_cases():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


def test_validate_reports_the_same_error_from_a_real_process(tmp_path):
    """The installed entry point, as a user runs it: one line, status 2 (``tasks validate`` and ``run``)."""
    _write_data(tmp_path)
    task = tmp_path / "t.toml"
    task.write_text(BASE + '[template]\nlabel_prefx = "a: "\n', encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=ROOT)
    for command in (["tasks", "validate", str(task)], ["run", "--tasks", str(task)]):
        done = subprocess.run([sys.executable, "-m", "StaICC", *command], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120)
        assert done.returncode == 2, done
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            f"staicc: error: task file {str(task)!r}, key 'template.label_prefx': unknown key; "
            "did you mean 'label_prefix'?"]
