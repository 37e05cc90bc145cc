"""OpenAI Batch API round trip: export -> answers written by a script from a real server -> import -> run.

The "batch service" here is a loop that POSTs each exported body to the OpenAI-protocol
reference server on 127.0.0.1 and writes a Batch-API result line, in shuffled order.
The imported run must equal a direct ``openai`` run against the same server.
"""
import json
import random
import urllib.request

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from backend_helpers import tiny_pair  # noqa: E402
from openai_reference_server import ReferenceServer  # noqa: E402

from StaICC.cli import main  # noqa: E402
from StaICC.scaleout.batch_api import export_batch, part_paths  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.requests import Request  # noqa: E402

WORKLOAD = ["--benchmarks", "Normal", "--datasets", "0", "--limit", "6"]


@pytest.fixture(scope="module")
def server():
    model, tokenizer = tiny_pair()
    with ReferenceServer(model, tokenizer) as running:
        yield running


def selection(server, scoring):
    args = f"base_url={server.base_url},model=tiny,scoring={scoring}"
    if scoring == "generate":
        args += ",chat=true,max_tokens=3,unparsed=label:0"
    if scoring == "top_logprobs":
        args += ",chat=true,top_logprobs=20"
    return ["--model", "openai", "--model-args", args, *WORKLOAD]


def answer_batch(server, requests_path, results_path, seed=0):
    """What the Batch API does: answer every line, write results with custom_id, in any order."""
    lines = [json.loads(line) for line in open(requests_path, encoding="utf-8")]
    random.Random(seed).shuffle(lines)
    root = server.base_url[:-len("/v1")]
    with open(results_path, "w", encoding="utf-8") as out:
        for n, line in enumerate(lines):
            assert line["method"] == "POST" and line["url"].startswith("/v1/")
            request = urllib.request.Request(root + line["url"], data=json.dumps(line["body"]).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(request, timeout=60) as response:
                body = json.loads(response.read())
            out.write(json.dumps({"id": f"batch_req_{n}", "custom_id": line["custom_id"], "error": None,
                                  "response": {"status_code": 200, "request_id": f"r{n}", "body": body}}) + "\n")
    return len(lines)


def results_of(directory):
    document = json.loads((directory / "results.json").read_text())
    return {name: b["results"] for name, b in document["benchmarks"].items()}, (directory / "samples.jsonl").read_text()


@pytest.mark.parametrize("scoring", ["sequence", "generate", "top_logprobs"])
def test_export_answer_import_run_equals_the_direct_run(server, tmp_path, capsys, scoring):
    requests_path, results_path, cache = tmp_path / "requests.jsonl", tmp_path / "results.jsonl", tmp_path / "c.sqlite"
    assert main(["batch", "export", *selection(server, scoring), "-o", str(requests_path)]) == 0
    prompts = int(capsys.readouterr().out.split(" prompts to answer")[0].split()[-1])
    lines = answer_batch(server, requests_path, results_path)
    assert lines == prompts * (2 if scoring == "sequence" else 1)  # one echo request per label, or one per prompt
    assert main(["batch", "import", str(results_path), *selection(server, scoring), "--cache", str(cache)]) == 0
    assert f"stored {prompts} answers" in capsys.readouterr().out
    assert main(["batch", "export", *selection(server, scoring), "--cache", str(cache), "-o", str(requests_path)]) == 0
    assert "nothing to export" in capsys.readouterr().out
    assert main(["run", *selection(server, scoring), "--cache", str(cache), "--output-dir", str(tmp_path / "batch"),
                 "--log-samples", "--no-progress"]) == 0
    assert "0 asked" in capsys.readouterr().out
    assert main(["run", *selection(server, scoring), "--output-dir", str(tmp_path / "direct"), "--log-samples",
                 "--no-progress"]) == 0
    assert results_of(tmp_path / "batch") == results_of(tmp_path / "direct")
    if scoring == "top_logprobs":  # the same top-k lists, so the same intervals
        assert (tmp_path / "batch" / "bounds.json").read_text() == (tmp_path / "direct" / "bounds.json").read_text()


def test_malformed_result_lines_each_give_one_line(server, tmp_path, capsys):
    requests_path, results_path = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    assert main(["batch", "export", *selection(server, "sequence"), "-o", str(requests_path)]) == 0
    prompts = int(capsys.readouterr().out.split(" prompts to answer")[0].split()[-1])
    answer_batch(server, requests_path, results_path)
    good = results_path.read_text().splitlines()
    first = json.loads(good[0])
    bad = [
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"response": {"status_code": 200, "body": {}}}),
        json.dumps({"custom_id": "nope/0", "response": {"status_code": 200, "body": {}}}),
        json.dumps(dict(first, response=None, error={"code": "rate_limit", "message": "too\nmany"})),
        json.dumps(dict(first, response={"status_code": 500, "body": {"error": {"message": "boom"}}})),
        json.dumps(dict(first, response={"status_code": 200, "body": {"model": "tiny", "choices": []}})),
    ]
    results_path.write_text("\n".join(bad + good[1:]) + "\n")
    status = main(["batch", "import", str(results_path), *selection(server, "sequence"),
                   "--cache", str(tmp_path / "c.sqlite")])
    captured = capsys.readouterr()
    errors = captured.err.strip().splitlines()
    assert status == 1
    assert len(errors) == len(bad)
    for number, (error, expected) in enumerate(zip(errors, [
            "not JSON", "expected a JSON object", "no custom_id", "is not a request of this run",
            "failed: too many", "HTTP status 500", "returned no choices"]), 1):
        assert error.startswith(f"staicc: error: {results_path}:{number}: ") and expected in error, error
    assert f"stored {prompts - 1} answers" in captured.out  # the request whose first label line was bad is not stored


def test_files_split_at_the_line_and_byte_limits(server, tmp_path):
    backend = make_backend("openai", base_url=server.base_url, model="tiny", scoring="generate")
    requests = [Request(f"prompt {i}", ("a", "b")) for i in range(5)]
    written = export_batch(backend, requests, str(tmp_path / "r.jsonl"), max_lines=2)
    assert [lines for _, lines in written] == [2, 2, 1]
    assert [path for path, _ in written] == part_paths(str(tmp_path / "r.jsonl"), 3)
    assert written[0][0].endswith("r-00001.jsonl")
    size = len(open(written[0][0], "rb").readline())
    written = export_batch(backend, requests, str(tmp_path / "s.jsonl"), max_bytes=2 * size + 1)
    assert [lines for _, lines in written] == [2, 2, 1]
    ids = [json.loads(line)["custom_id"] for path, _ in written for line in open(path)]
    assert ids == [f"{backend.fingerprint()[:16]}:{r.key()}" for r in requests]  # tagged with the model
    with pytest.raises(ValueError, match="use --model openai"):
        export_batch(make_backend("reference"), requests, str(tmp_path / "t.jsonl"))
