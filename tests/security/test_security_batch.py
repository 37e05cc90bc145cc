"""Batch-API attacks: results of another model or another export, conflicting duplicates, a partial
echo, over-long and deeply nested lines, links planted at the export's names, and a Hypothesis fuzz
of result lines.  No attack stores an answer; each bad line is one error naming FILE:LINE."""
import contextlib
import io
import json
import os
import sys
import tracemalloc

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backend_helpers import completion_with_logprobs  # noqa: E402

from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.cache import PredictionCache  # noqa: E402
from StaICC.cli import main  # noqa: E402
from StaICC.requests import Request  # noqa: E402
from StaICC.scaleout.batch_api import export_batch, export_entries  # noqa: E402
from StaICC.scaleout.batch_results import import_batch  # noqa: E402

LABELS = ("negative", "positive")
SELECTION = ["--model", "openai", "--model-args", "base_url=http://127.0.0.1:9/v1,model=m", "--datasets", "0",
             "--limit", "5"]


def openai(model="m", base_url="http://127.0.0.1:9/v1", **extra):
    return make_backend("openai", base_url=base_url, model=model, **extra)


REQUESTS = [Request(f"Review: film {i}. Sentiment:", LABELS, "Normal", "toy", i) for i in range(3)]


def echo_body(context, continuation, lp, model="m"):
    text = context + continuation
    body = completion_with_logprobs(text + "!", [("", None), (context, -1.0), (continuation, lp), ("!", -0.2)])
    body["model"] = model
    return body


def result_lines(backend, requests=REQUESTS, model="m"):
    """A valid Batch result line per exported request: label j of query i scores -(1 + i + j) / 4."""
    lines = []
    for n, (custom_id, request, job) in enumerate(export_entries(backend, requests)):
        j = int(custom_id.rsplit("/", 1)[1])
        body = echo_body(job[0], job[1], -(1 + request.query_index + j) / 4, model)
        lines.append(json.dumps({"id": f"r{n}", "custom_id": custom_id, "error": None,
                                 "response": {"status_code": 200, "body": body}}))
    return lines


def imported(tmp_path, backend, lines, name="results.jsonl", **options):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        report = import_batch(backend, REQUESTS, [str(path)], cache, **options)
        stored = cache.lookup(backend.fingerprint(), REQUESTS)
    return report, stored


def test_valid_results_are_stored(tmp_path):
    backend = openai()
    report, stored = imported(tmp_path, backend, result_lines(backend))
    assert report.stored == 3 and not report.errors and all(stored)


def test_another_models_results_are_refused_line_by_line(tmp_path):
    backend = openai()
    report, stored = imported(tmp_path, backend, result_lines(backend, model="other-model"))
    assert report.stored == 0 and stored == [None] * 3
    assert len(report.errors) == 6 and all("answered by model 'other-model', but the export asked 'm'" in e
                                           for e in report.errors)


def test_a_dated_snapshot_of_the_model_is_its_answer(tmp_path):
    backend = openai(model="gpt-4o-mini")
    report, _ = imported(tmp_path, backend, result_lines(backend, model="gpt-4o-mini-2024-07-18"))
    assert report.stored == 3 and not report.errors
    report, _ = imported(tmp_path, openai(model="gpt-4o"), result_lines(openai(model="gpt-4o"), model="gpt-4o-mini"))
    assert report.stored == 0


def test_results_of_another_export_are_refused(tmp_path):
    other = openai(base_url="http://127.0.0.2:9/v1")  # another server: another identity, another tag
    report, stored = imported(tmp_path, openai(), result_lines(other))
    assert report.stored == 0 and stored == [None] * 3
    assert "exported for another model or other model settings" in report.errors[0]
    untagged = [line.replace(json.loads(line)["custom_id"].split(":")[0] + ":", "") for line in result_lines(openai())]
    report, _ = imported(tmp_path, openai(), untagged, "untagged.jsonl")
    assert report.stored == 0 and "carries no export tag" in report.errors[0]


def test_a_conflicting_duplicate_stores_nothing_at_all(tmp_path):
    backend = openai()
    lines = result_lines(backend)
    changed = json.loads(lines[0])
    changed["response"]["body"]["choices"][0]["logprobs"]["token_logprobs"][2] = -3.0
    report, stored = imported(tmp_path, backend, lines + [json.dumps(changed)])
    assert report.stored == 0 and report.conflicts == 1 and stored == [None] * 3
    assert f"results.jsonl:{len(lines) + 1}: custom_id" in report.errors[0] and "repeats" in report.errors[0]
    report, _ = imported(tmp_path, backend, lines + [lines[0]], "same.jsonl")  # the same answer twice: harmless
    assert report.stored == 3 and not report.errors


def test_a_partial_echo_in_a_result_is_refused(tmp_path):
    backend = openai()
    lines = result_lines(backend)
    line = json.loads(lines[0])
    body = line["response"]["body"]
    logprobs = body["choices"][0]["logprobs"]
    half = len(logprobs["tokens"][1]) // 2
    logprobs["tokens"][1] = logprobs["tokens"][1][:half]  # half the context, then the label's token far after it
    line["response"]["body"] = body
    report, stored = imported(tmp_path, backend, [json.dumps(line)] + lines[1:])
    assert report.stored == 2 and stored[0] is None
    assert "results.jsonl:1:" in report.errors[0] and "skip characters" in report.errors[0]


def test_an_over_long_line_is_skipped_unread(tmp_path):
    backend = openai()
    lines = result_lines(backend)
    path = tmp_path / "results.jsonl"
    with open(path, "w") as fh:
        fh.write('{"custom_id": "' + "x" * (20 << 20) + '"}\n' + "\n".join(lines) + "\n")
    with PredictionCache(str(tmp_path / "c.sqlite")) as cache:
        tracemalloc.start()
        try:
            report = import_batch(backend, REQUESTS, [str(path)], cache, max_line_bytes=1 << 20)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert report.stored == 3 and len(report.errors) == 1
    assert report.errors[0].startswith(f"{tmp_path / 'results.jsonl'}:1: the line is longer than 1048576 bytes")
    assert peak < 8 << 20, peak  # far below the 20 MB line


def test_deeply_nested_lines_are_one_error(tmp_path):
    backend = openai()
    lines = result_lines(backend)
    deep = '{"custom_id": "x", "response": ' + "[" * 100000 + "]" * 100000 + "}"
    inner = json.loads(lines[0])
    inner["response"]["body"]["extra"] = json.loads("[" * 500 + "]" * 500)  # parses; never walked
    report, _ = imported(tmp_path, backend, [deep, json.dumps(inner)] + lines[1:])
    assert report.stored == 3 and len(report.errors) == 1 and "nested too deeply" in report.errors[0]


def test_export_replaces_links_planted_at_its_names(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    output = tmp_path / "requests.jsonl"
    for name in ("requests.jsonl", "requests.jsonl.tmp", "requests-00001.jsonl"):
        os.symlink(victim, tmp_path / name)
    written = export_batch(openai(), REQUESTS, str(output))
    assert victim.read_text() == "precious"
    assert written == [(str(output), 6)] and not os.path.islink(output)
    assert len(output.read_text().splitlines()) == 6
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".staicc-")]  # no temporary left behind


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_round_trip_refuses_another_model_and_conflicts(tmp_path):
    requests_path, results_path, cache = tmp_path / "requests.jsonl", tmp_path / "results.jsonl", tmp_path / "c.sqlite"
    code, out, err = _cli(["batch", "export", *SELECTION, "-o", str(requests_path)])
    assert code == 0, err
    lines = []
    for line in map(json.loads, requests_path.read_text().splitlines()):
        prompt = line["body"]["prompt"]
        body = echo_body(prompt[:-3], prompt[-3:], -1.0, model="someone-else")
        lines.append(json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": body}}))
    results_path.write_text("\n".join(lines) + "\n")
    code, out, err = _cli(["batch", "import", str(results_path), *SELECTION, "--cache", str(cache)])
    assert code == 1 and "stored 0 answers" in out and "Traceback" not in err
    assert len(err.strip().splitlines()) == len(lines) and "answered by model 'someone-else'" in err
    right = [line.replace('"someone-else"', '"m"') for line in lines]
    results_path.write_text("\n".join(right + [right[0].replace("-1.0", "-2.0", 1)]) + "\n")
    code, out, err = _cli(["batch", "import", str(results_path), *SELECTION, "--cache", str(cache)])
    assert code == 1 and out.startswith("stored nothing in") and "two different answers" in out
    with PredictionCache(str(cache)) as opened:
        assert opened.stats()["entries"] == 0


# ---------------------------------------------------------------------------- fuzz
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12),
    st.sampled_from([10 ** 5000, -(10 ** 4000), "9" * 5000, -1, 2 ** 63, float("inf"), "", [], {}, "other-model",
                     "m-2024-01-01",
                     [[[[[[]]]]]], {"a": {"b": {"c": []}}}]),
    st.lists(st.integers(), max_size=4))


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
    value = json.loads(json.dumps(value))
    holder = value
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = new
    return value


def _dump(value):
    try:
        return json.dumps(value, allow_nan=True)
    except ValueError:
        return '{"custom_id": ' + "9" * 5000 + "}"


@pytest.fixture(scope="module")
def valid():
    backend = openai()
    return backend, result_lines(backend)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_result_lines_store_nothing_wrong(valid, tmp_path_factory, data):
    backend, lines = valid
    row = data.draw(st.integers(0, len(lines) - 1))
    line = json.loads(lines[row])
    kind = data.draw(st.sampled_from(["replace", "truncate", "bytes", "duplicate"]))
    if kind == "replace":
        path = data.draw(st.sampled_from(list(_paths(line))))
        text = _dump(_replaced(line, path, data.draw(HOSTILE)))
    elif kind == "truncate":
        text = lines[row][:data.draw(st.integers(0, len(lines[row]) - 1))]
    elif kind == "bytes":
        text = data.draw(st.text(max_size=200))
    else:
        text = lines[row]
    mutated = lines[:row] + [text] + lines[row + 1:] + ([lines[row]] if kind == "duplicate" else [])
    directory = tmp_path_factory.mktemp("fuzz")
    path = directory / "results.jsonl"
    path.write_bytes(("\n".join(m.replace("\n", " ") for m in mutated) + "\n").encode("utf-8", "surrogatepass"))
    with PredictionCache(str(directory / "c.sqlite")) as cache:
        report = import_batch(backend, REQUESTS, [str(path)], cache)
        stored = cache.lookup(backend.fingerprint(), REQUESTS)
    assert all(e.startswith(f"{path}:") and "\n" not in e for e in report.errors), report.errors
    assert report.stored == sum(1 for s in stored if s is not None)
    try:
        parsed = json.loads(text)
        answered_by = parsed["response"]["body"]["model"]
    except (ValueError, KeyError, TypeError, RecursionError):
        answered_by = None
    if answered_by not in ("m",) and not (isinstance(answered_by, str) and answered_by.startswith("m-20")):
        assert stored[REQUESTS.index(REQUESTS[row // 2])] is None  # no other model's answer stored
    expected = imported(tmp_path_factory.mktemp("valid"), backend, lines)[1]
    for request_index, answer in enumerate(stored):  # the untouched requests keep their right answers
        if answer is not None and request_index != row // 2:
            assert answer == expected[request_index]
