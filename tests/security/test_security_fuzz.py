"""Property tests at the edges: hostile run directories through `staicc report` and
`staicc compare`, and odd values through the public API, end in a clear error (or a
result), never in a traceback.  The strategies of tests/cli_strategies.py are reused."""
import contextlib
import copy
import io
import json
import os
import sys
import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from cli_strategies import VALUES  # noqa: E402

from StaICC.cli import main  # noqa: E402
from StaICC.errors import TamperingWarning  # noqa: E402

#: the exceptions a public function may raise on a bad argument: each names what was expected
CLEAR = (ValueError, TypeError, FileNotFoundError, NotADirectoryError, IsADirectoryError, ImportError)

JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=8)
HOSTILE = st.one_of(JSON, st.sampled_from([10 ** 5000, "9" * 5000, -1, 2 ** 63, float("inf"), "", [], {},
                                           "\\input{/etc/passwd}", "=cmd|x", "\x1b[2J", "../../x", "NaN"]))


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A small real run directory (built-in model, one dataset) with its records."""
    directory = str(tmp_path_factory.mktemp("fuzz") / "run")
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        assert main(["run", "--datasets", "0", "--limit", "8", "--output-dir", directory, "--log-samples",
                     "--no-progress"]) == 0
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as fh:
        document = json.load(fh)
    with open(os.path.join(directory, "samples.jsonl"), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    return document, records


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def _replaced(value, path, new):
    if not path:
        return new
    value = copy.deepcopy(value)
    holder = value
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = new
    return value


def _dump(value):
    try:
        return json.dumps(value, allow_nan=True)
    except ValueError:  # an integer Python refuses to write: write its digits as JSON would
        return "9" * 5000


def _cli(argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(argv)
    return code, err.getvalue()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_run_directories_end_in_one_line(real_run, tmp_path_factory, data):
    document, records = real_run
    directory = tmp_path_factory.mktemp("hostile")
    target = data.draw(st.sampled_from(["results", "samples", "both"]))
    if target in ("results", "both"):
        path = data.draw(st.sampled_from(list(_paths(document))))
        document = _replaced(document, path, data.draw(HOSTILE))
    if target in ("samples", "both"):
        row = data.draw(st.integers(0, len(records) - 1))
        path = data.draw(st.sampled_from(list(_paths(records[row]))))
        records = records[:row] + [_replaced(records[row], path, data.draw(HOSTILE))] + records[row + 1:]
    (directory / "results.json").write_text(_dump(document), encoding="utf-8")
    (directory / "samples.jsonl").write_text("\n".join(_dump(r) for r in records) + "\n", encoding="utf-8")
    command = data.draw(st.sampled_from([["report", str(directory)], ["report", str(directory), "--format", "latex"],
                                         ["compare", str(directory), str(directory), "--resamples", "20"]]))
    code, err = _cli(command)
    assert code in (0, 1, 2), (command, err)
    if code:
        assert len(err.strip().splitlines()) == 1 and "error: " in err, err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(VALUES, HOSTILE, st.sampled_from([None, 10 ** 20, 2, 1.5, True, object()])))
def test_public_api_refuses_odd_values_clearly(value):
    from StaICC.backends.registry import make_backend, parse_model_args
    from StaICC.cache import PredictionCache
    from StaICC.engine.procedures import LabelNoiseProcedure
    from StaICC.report.runs import load_run
    from StaICC.retrieval import retriever_from_name
    calls = [lambda: LabelNoiseProcedure(value), lambda: retriever_from_name(value),
             lambda: parse_model_args(value), lambda: make_backend(value), lambda: load_run(value),
             lambda: make_backend("openai", base_url=value, model="m")]
    from StaICC import GLER, Normal
    from StaICC.custom_datasets import from_records
    calls += [lambda: Normal(k=value, datasets=["TREC"]), lambda: Normal(datasets=[value]),
              lambda: GLER(interpolations=value, datasets=["TREC"]),
              lambda: from_records(value, name="x", input_columns="text", label_column="label"),
              lambda: from_records([{"text": "a", "label": value}] * 30, name="x", input_columns="text",
                                   label_column="label")]
    if not isinstance(value, str) or not value or "\x00" in value:
        calls.append(lambda: PredictionCache(value))  # a plain string would create a cache file here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in calls:
            with contextlib.suppress(CLEAR):
                call()


def test_gler_with_a_huge_interpolation_count_is_refused_up_front():
    from StaICC import GLER
    with pytest.raises(ValueError, match=r"interpolations must be at most 1000 .* got 100000000000000000000"):
        GLER(interpolations=10 ** 20, datasets=["TREC"])


def test_use_retriever_none_is_a_clear_type_error(normal):
    with pytest.raises(TypeError, match="use_retriever expects a retriever .*got NoneType"):
        normal[0].use_retriever(None)


def test_a_5000_digit_label_names_the_file_and_line(tmp_path):
    from StaICC.custom_datasets import from_csv, from_jsonl
    lines = [json.dumps({"text": f"row {i}", "label": i % 2}) for i in range(30)]
    lines[7] = '{"text": "row 7", "label": ' + "9" * 5000 + "}"
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"d\.jsonl.*line 8"):
        from_jsonl(str(path), name="huge", input_columns="text", label_column="label")
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("text,label\n" + "".join(f"row {i},{i % 2}\n" for i in range(6)) + "row 6," + "9" * 5000 +
                        "\n" + "".join(f"row {i},{i % 2}\n" for i in range(7, 30)))
    with pytest.raises(ValueError, match=r"d\.csv.*(row|line) 8.*5000 digits"):
        from_csv(str(csv_path), name="huge", input_columns="text", label_column="label")


def test_a_huge_samples_file_is_refused_before_it_is_read(real_run, tmp_path):
    from StaICC.report.runs import RunFormatError, load_run
    document, records = real_run
    (tmp_path / "results.json").write_text(json.dumps(document))
    with open(tmp_path / "samples.jsonl", "w") as fh:
        fh.write(json.dumps(records[0]) + "\n")
        fh.truncate(3 << 30)  # a sparse 3 GiB file: nothing to read, a size to refuse
    with pytest.raises(RunFormatError, match=r"samples\.jsonl: is 3221225472 bytes, over the \d+-byte limit"):
        load_run(str(tmp_path))
    code, err = _cli(["report", str(tmp_path)])
    assert code == 1 and "over the" in err and len(err.strip().splitlines()) == 1


def test_json_to_a_directory_is_refused_before_any_work(tmp_path):
    code, err = _cli(["--datasets", "0", "--json", str(tmp_path)])
    assert code == 2 and err.strip() == f"staicc: error: --json {tmp_path} is a directory; give a file name such as " \
                                         f"{tmp_path}/results.json"


def test_deeply_nested_and_huge_number_results_files_end_in_one_line(real_run, tmp_path):
    document, _records = real_run
    for name, text in (("deep", "[" * 100000 + "]" * 100000), ("digits", '{"format": ' + "9" * 5000 + "}")):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "results.json").write_text(text)
        code, err = _cli(["report", str(directory)])
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        assert "results.json" in err and ("nested too deeply" in err or "cannot be read" in err), err


def test_report_output_to_a_directory_is_one_line(real_run, tmp_path):
    document, records = real_run
    (tmp_path / "results.json").write_text(json.dumps(document))
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    target = tmp_path / "out"
    target.mkdir()
    code, err = _cli(["report", str(tmp_path), "-o", str(target)])  # an argument error: refused before any work
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is a directory" in err, err
