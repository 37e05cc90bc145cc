"""``staicc run --benchmarks all`` with ``scoring=top_logprobs`` over a real localhost server: the intervals cover
every sub-benchmark of the standard table (GLER's slopes, Template_sens and Demo_sens too) and each averaged row,
in the printed table and in ``bounds.json``, and each recorded point value lies inside its interval."""
import hashlib
import json
import math

from StaICC.cli import main

from backend_helpers import ThreadedServer
from openai_reference_server import JSONHandler


class SeededServer(ThreadedServer):
    """A chat server whose top-3 list (the two SST-2 labels and one other token) takes its probabilities from a
    digest of the request: every answer differs, some decided and some not."""

    def __init__(self):
        class Handler(JSONHandler):
            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                digest = hashlib.sha256(raw).digest()
                a, b = 0.05 + 0.6 * digest[0] / 255, 0.05 + 0.3 * digest[1] / 255
                top = [{"token": " positive", "logprob": math.log(a)}, {"token": "neg", "logprob": math.log(b)},
                       {"token": " the", "logprob": math.log(0.02)}]
                top.sort(key=lambda entry: -entry["logprob"])
                self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"},
                                              "logprobs": {"content": [{"token": top[0]["token"], "logprob":
                                                                        top[0]["logprob"], "top_logprobs": top}]}}]})
        self._serve(Handler)


def test_the_whole_table_is_bounded_and_every_point_is_inside(tmp_path, capsys):
    with SeededServer() as server:
        assert main(["run", "--model", "openai", "--model-args",
                     f"base_url={server.base_url},model=m,scoring=top_logprobs,chat=true,top_logprobs=3,retries=0",
                     "--benchmarks", "all", "--datasets", "GLUE-SST2", "--limit", "10", "--no-progress",
                     "--output-dir", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    rows = json.loads((tmp_path / "out" / "bounds.json").read_text())
    found = {(r["benchmark"], r["dataset"], r["metric"]) for r in rows}
    for part, metric in [("Normal", "accuracy"), ("Contextual_bias", "bias_entropy"), ("Domain_bias", "bias_entropy"),
                         ("Post_bias", "post_bias_dl_div"), ("GLER", "accuracy"), ("GLER", "macro_F1"),
                         ("Template_sens", "consistency"), ("Demo_sens", "consistency")]:
        assert (part, "GLUE-SST2", metric) in found and (part, "Averaged", metric) in found, (part, metric)
        assert f"{part}/Averaged" in printed
    scalar = [r for r in rows if isinstance(r["point"], float)]
    assert len(scalar) >= 20
    for r in scalar:
        assert r["low"] - 1e-12 <= r["point"] <= r["high"] + 1e-12, r
    assert any(r["width"] > 0 for r in scalar)
    assert not [r for r in rows if r["benchmark"] == "Contextual_bias" and r["metric"] == "accuracy"]
