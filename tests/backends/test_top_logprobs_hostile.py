"""A hostile top-k server over real HTTP: every bad answer of a run is one line (dataset, query, what is wrong),
the good ones are kept, and no number is computed from a bad one.  The completions endpoint's top-k list is a JSON
object keyed by token: a token listed twice there (duplicated keys, written raw) is seen too."""
import json
import threading

import pytest

from StaICC.backends.registry import make_backend
from StaICC.backends.top_logprobs import BadTopLists
from StaICC.cli import main
from StaICC.requests import Request

from backend_helpers import ThreadedServer
from openai_reference_server import JSONHandler

#: the bad lists a mixed server rotates through, and what the line says about each
BAD = [("fewer", [["positive", -0.1]], "1 top log-probabilities, 2 were asked"),
       ("duplicated", [["positive", -0.5], ["positive", -1.5]], "twice"),
       ("above_zero", [["positive", 0.5], ["negative", -1.0]], "impossible"),
       ("nan", [["positive", "NaN"], ["negative", -1.0]], "impossible")]
GOOD = [["positive", -0.5], ["negative", -1.5]]


class MixedServer(ThreadedServer):
    """Answers every ``every``-th request (counting from the first; None: none) with the next of ``kinds``'
    bad lists, the others well; chat answers are JSON objects, completions answers raw text whose top-k
    object repeats a key when the list does."""

    def __init__(self, every, kinds=BAD):
        self.given, self.bad, lock = 0, [], threading.Lock()
        server = self

        class Handler(JSONHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with lock:
                    number, server.given = server.given, server.given + 1
                    entries = GOOD
                    if every is not None and number % every == 0:
                        kind, entries, _ = kinds[len(server.bad) % len(kinds)]
                        server.bad.append(kind)
                if "messages" in body:
                    top = [{"token": t, "logprob": v} for t, v in entries]
                    self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"},
                                                  "logprobs": {"content": [{"token": "x", "logprob": -1.0,
                                                                            "top_logprobs": top}]}}]})
                    return
                pairs = ", ".join(f"{json.dumps(t)}: {json.dumps(v)}" for t, v in entries)  # keys may repeat
                raw = ('{"choices": [{"index": 0, "text": "x", "logprobs": {"tokens": ["x"], "token_logprobs": '
                       f'[-1.0], "top_logprobs": [{{{pairs}}}]}}}}]}}').encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
        self._serve(Handler)


def backend_of(server, chat):
    return make_backend("openai", base_url=server.base_url, model="m", scoring="top_logprobs", chat=chat,
                        top_logprobs="2", retries="0", concurrency="1")


@pytest.mark.parametrize("chat", ["true", "false"])
def test_every_bad_answer_of_a_call_is_a_line_and_the_good_ones_are_kept(chat):
    requests = [Request(f"Review: {i}. Sentiment:", ("negative", "positive"), dataset="toy", query_index=i)
                for i in range(8)]
    with MixedServer(every=2) as server:
        with pytest.raises(BadTopLists) as caught:
            backend_of(server, chat).score(requests)
    error = caught.value
    assert len(error.lines) == 4 == len(server.bad)
    for number, (line, (_kind, _entries, problem)) in enumerate(zip(error.lines, BAD)):
        assert line.startswith(f"dataset 'toy', query {2 * number}, pass 0: ") and problem in line, line
    assert [a is None for a in error.answered] == [i % 2 == 0 for i in range(8)]
    assert all(a.prediction[1] > a.prediction[0] for a in error.answered if a is not None)
    assert "\n" not in str(error) and "4 bad answers" in str(error)


def test_a_completions_token_listed_twice_is_seen():
    request = Request("Review: fine. Sentiment:", ("negative", "positive"), dataset="toy", query_index=5)
    with MixedServer(every=1, kinds=BAD[1:2]) as server:
        with pytest.raises(BadTopLists, match="dataset 'toy', query 5, pass 0: .*'positive' twice"):
            backend_of(server, "false").score([request])


def run_command(server, tmp_path, limit, cache=True):
    args = ["run", "--model", "openai", "--model-args",
            f"base_url={server.base_url},model=m,scoring=top_logprobs,chat=true,top_logprobs=2,retries=0,model_id=m,"
            "concurrency=1", "--benchmarks", "Normal", "--datasets", "GLUE-SST2", "rotten_tomatoes",
            "--limit", str(limit), "--output-dir", str(tmp_path / "out"), "--no-progress"]
    return main(args + (["--cache", str(tmp_path / "answers.sqlite")] if cache else []))


def test_a_run_prints_one_line_per_bad_answer_over_every_dataset_and_writes_no_result(tmp_path, capsys):
    with MixedServer(every=5) as server:
        assert run_command(server, tmp_path, limit=6) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("staicc: bad answer: ")]
    assert len(lines) == len(server.bad) >= 4 and server.given == 24  # every request was asked
    assert {line.split("'")[1] for line in lines} == {"GLUE-SST2", "rotten_tomatoes"}
    assert f"staicc: error: {len(lines)} bad answer(s); no result was computed from them" in err
    assert not (tmp_path / "out" / "results.json").exists()
    with MixedServer(every=None) as good:  # the good answers were kept: only the refused ones are asked again
        assert run_command(good, tmp_path, limit=6) == 0
        assert good.given == len(lines)
    assert json.loads((tmp_path / "out" / "results.json").read_text())


def test_past_twenty_bad_answers_the_rest_are_counted(tmp_path, capsys):
    with MixedServer(every=1) as server:
        assert run_command(server, tmp_path, limit=12, cache=False) == 1
    err = capsys.readouterr().err
    assert sum(line.startswith("staicc: bad answer: ") for line in err.splitlines()) == 20
    assert f"staicc: error: {server.given} bad answer(s) (the first 20 shown)" in err
