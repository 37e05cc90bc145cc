"""The task schema, the TOML writer and the standard datasets as tasks, without a command line."""
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from StaICC.datasets import load_standard_dataset, standard_dataset_names
from StaICC.tasks import TaskError, load_task, parse_task, schema_rows, standard_task, standard_task_mapping, to_toml
from StaICC.tasks.files import _toml_module
from StaICC.tasks.runs import model_choice

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
toml = _toml_module()


@pytest.mark.parametrize("name", standard_dataset_names())
def test_every_standard_dataset_reads_back_as_itself(name, tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(to_toml(standard_task_mapping(name)), encoding="utf-8")
    task = load_task(str(path))
    standard = load_standard_dataset(name)
    assert task.standard and task.dataset.standard and task.departures == ()
    assert task.dataset.name == name and task.dataset.label_space == standard.label_space
    assert task.dataset.default_template() == standard.default_template()
    assert task.dataset.get_alternate_template() == standard.get_alternate_template()
    assert task.dataset.split_sizes == standard.split_sizes
    assert task.dataset.label_mapping == standard.label_mapping
    assert task.source.sha256 == standard_task(name).source.sha256  # the built-in task is the text show prints


def _template(key, value):
    """Change a template part and drop the alternates: Template_sens's option 0 then follows the template."""
    def change(mapping):
        mapping["template"][key] = value
        del mapping["template"]["alternates"]
    return change


@pytest.mark.parametrize("change,departure", [
    (lambda m: m["labels"]["words"].__setitem__(0, "abbr"), "label words"),
    (_template("label_prefix", "answer: "), "template label_prefix"),
    (_template("instruction", "Classify. "), "template instruction"),
    (lambda m: m["template"]["alternates"]["label_affix"].__setitem__(2, " | "), "Template_sens alternates"),
    (lambda m: m.__setitem__("name", "my_trec"), "renamed TREC to my_trec"),
])
def test_one_change_to_a_standard_dataset_is_named_and_not_standard(change, departure):
    from StaICC.tasks.files import TaskSource
    from StaICC.tasks.task import task_from_source
    mapping = standard_task_mapping("TREC")
    change(mapping)
    task = task_from_source(TaskSource("t.toml", "toml", mapping, "0" * 64))
    assert not task.standard and not task.dataset.standard
    assert task.departures[0].startswith(departure)
    assert list(task.departures[1:]) in ([], ["Template_sens alternates differ from the standard's"])
    assert task.dataset.departures == ["task: " + d for d in task.departures]
    assert load_standard_dataset("TREC").label_space[0] == "short"  # the standard object is untouched
    if departure.startswith("template label_prefix"):  # Template_sens row 0 follows the task's template
        alternates = task.dataset.get_alternate_template()["label_prefix"]
        assert alternates == ["answer: ", "label: ", "Label: "]


def test_a_template_change_with_the_standard_alternates_left_in_names_option_0():
    from StaICC.tasks.files import TaskSource
    from StaICC.tasks.task import task_from_source
    mapping = standard_task_mapping("TREC")
    mapping["template"]["label_prefix"] = "answer: "
    with pytest.raises(TaskError) as error:
        task_from_source(TaskSource("t.toml", "toml", mapping, "0" * 64))
    assert error.value.key == "template.alternates" and "'answer: '" in str(error.value)


text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(text, min_size=1, max_size=4), prefix=text, key=text.filter(bool))
def test_the_toml_writer_reads_back_every_string(words, prefix, key):
    mapping = {"name": prefix, "labels": {"words": words, "aliases": {key: [prefix]}},
               "template": {"alternates": {"input_text_prefixes": [[prefix], [key], ["x"]]}}}
    assert toml.loads(to_toml(mapping)) == mapping


def test_unknown_keys_suggest_the_nearest_at_every_level():
    with pytest.raises(TaskError) as error:
        parse_task({"name": "x", "template": {"alternates": {"label_afix": ["a", "b", "c"]}}}, "t.toml")
    assert error.value.key == "template.alternates.label_afix" and error.value.path == "t.toml"
    assert str(error.value).endswith("did you mean 'label_affix'?")
    with pytest.raises(TaskError, match="valid keys here: apply_chat_template, args, backend"):
        parse_task({"name": "x", "model": {"zzz": 1}}, "t.toml")


def test_the_docs_list_every_key():
    with open(os.path.join(ROOT, "docs", "tasks.md"), encoding="utf-8") as handle:
        docs = handle.read()
    missing = [key for key, _, _ in schema_rows() if f"`{key}`" not in docs]
    assert not missing


def _task(tmp_path, name, extra):
    from StaICC.tasks import find_task
    path = tmp_path / f"{name}.toml"
    path.write_text(to_toml(dict(standard_task_mapping("SST5"), name=name)) + extra, encoding="utf-8")
    return find_task(str(path))


def test_model_defaults_apply_to_their_backend_and_yield_to_the_command(tmp_path):
    task = _task(tmp_path, "a", '\n[model]\nbackend = "hf"\nscoring = "sequence"\n[model.args]\ndtype = "float32"\n')
    assert model_choice([task], None, {}) == ("hf", {"scoring": "sequence", "dtype": "float32"})
    assert model_choice([task], None, {"scoring": "first_token"}) == ("hf", {"scoring": "first_token",
                                                                            "dtype": "float32"})
    assert model_choice([task], "reference", {}) == ("reference", {})  # defaults of another backend stay out
    other = _task(tmp_path, "b", '\n[model]\nbackend = "hf"\nscoring = "last_token"\n')
    with pytest.raises(ValueError, match="set different model argument scoring"):
        model_choice([task, other], None, {})


def test_deduplication_drops_repeated_inputs_before_the_split(tmp_path):
    rows = "".join(f"text {i % 30},{'a' if i % 2 else 'b'}\n" for i in range(60))
    (tmp_path / "d.csv").write_text("text,label\n" + rows, encoding="utf-8")
    base = 'name = "d"\n[data]\npath = "d.csv"\ninput_columns = "text"\nlabel_column = "label"\n'
    (tmp_path / "t.toml").write_text(base + "deduplicate = true\n", encoding="utf-8")
    task = load_task(str(tmp_path / "t.toml"))
    assert len(task.dataset) == 30 and task.dataset.split_sizes == (6, 18, 6)
    texts = [task.dataset.get_input_text(i)[0] for i in range(30)]
    assert len(set(texts)) == 30
    (tmp_path / "u.toml").write_text(base, encoding="utf-8")
    assert len(load_task(str(tmp_path / "u.toml")).dataset) == 60


def test_importing_the_tasks_package_loads_no_optional_dependency():
    code = ("import sys, StaICC.tasks, StaICC.cli.tasks; "
            "print(sorted(m for m in ('yaml', 'tomli', 'torch', 'numpy', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_toml_before_python_3_11_names_the_extra(monkeypatch):
    from StaICC.tasks import files
    monkeypatch.setitem(sys.modules, "tomli", None)  # tomli not installed
    with pytest.raises(ImportError, match=r'pip install "StaICC\[tasks\]"'):
        files._toml_module((3, 10))


def test_no_task_data_is_read_while_another_task_has_a_wrong_key(tmp_path, monkeypatch):
    from StaICC.tasks import find_tasks, task
    resolved = []
    monkeypatch.setattr(task, "resolve_dataset", lambda config, source: resolved.append(config.name))
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(to_toml(standard_task_mapping("SST5")), encoding="utf-8")
    bad.write_text('name = "x"\n[data]\nsplitt = "train"\n', encoding="utf-8")
    with pytest.raises(TaskError, match="key 'data.splitt'"):
        find_tasks([str(good), str(bad)])
    assert resolved == []
