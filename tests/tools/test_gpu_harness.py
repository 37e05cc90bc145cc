"""The one-shot GPU run's harness (benchmarks/gpu_harness.py) and the pure parts of its stages: a failing stage does
not stop the next, a stage that does not fit is skipped, the watchdog ends a hung stage with the files kept, a pack
padded to one shape keeps its tree mask, and the 8B-wide stack's extrapolation by layer count."""
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.append(BENCHMARKS)  # after the tests' own folders: benchmarks/ has a route_matrix.py of its own

from gpu_harness import RESULTS_FILE, TABLE_FILE, Harness, Stage, StageSkipped  # noqa: E402


def read(out):
    with open(os.path.join(out, RESULTS_FILE), encoding="utf-8") as handle:
        record = json.load(handle)
    with open(os.path.join(out, TABLE_FILE), encoding="utf-8") as handle:
        return record, handle.read()


def test_a_failing_stage_is_recorded_with_its_traceback_and_the_next_stage_runs(tmp_path):
    harness = Harness(str(tmp_path), total_s=60)

    def broken(_until):
        raise ValueError("boom in the tree warm-up")

    harness.run_stage(Stage("first", "raises", broken, budget_s=10, needs_s=0))
    record, _ = read(str(tmp_path))
    assert [s["status"] for s in record["stages"]] == ["error"]  # written as soon as the stage ended
    harness.run_stage(Stage("second", "works", lambda _until: {"notes": ["fine"], "tables": [
        {"columns": ["method", "s"], "rows": [["rows", 1.5]]}]}, budget_s=10, needs_s=0))
    record, table = read(str(tmp_path))
    first, second = record["stages"]
    assert first["status"] == "error" and first["error"] == "ValueError: boom in the tree warm-up"
    assert "in broken" in first["traceback"]
    assert second["status"] == "ok" and second["result"]["notes"] == ["fine"]
    assert "status: **error**" in table and "ValueError: boom in the tree warm-up" in table
    assert "| method | s |" in table and "| rows | 1.5 |" in table and "- fine" in table


def test_a_stage_gets_the_smaller_of_its_budget_and_the_time_left_and_is_skipped_when_it_cannot_fit(tmp_path):
    harness = Harness(str(tmp_path), total_s=5)
    seen = []
    harness.run_stage(Stage("short", "records its deadline", lambda until: seen.append(until - time.perf_counter()) or {},
                            budget_s=100, needs_s=1))
    assert 0 < seen[0] <= 5
    harness.run_stage(Stage("long", "needs more than is left", lambda _until: seen.append("ran") or {},
                            budget_s=100, needs_s=30))

    def declines(_until):
        raise StageSkipped("no packing was measured")

    harness.run_stage(Stage("declines", "decides it cannot run", declines, budget_s=10, needs_s=0))
    record, table = read(str(tmp_path))
    assert seen[1:] == []  # the skipped stage never ran
    statuses = {s["name"]: (s["status"], s.get("reason")) for s in record["stages"]}
    assert statuses["long"][0] == "skipped" and statuses["long"][1].startswith("needs 30 s, ")
    assert statuses["declines"] == ("skipped", "no packing was measured")
    assert "reason: needs 30 s" in table


def test_an_injected_failure_fails_only_its_stage(tmp_path):
    harness = Harness(str(tmp_path), total_s=60, inject={"b"})
    for name in "abc":
        harness.run_stage(Stage(name, name, lambda _until: {"notes": ["ran"]}, budget_s=5, needs_s=0))
    record, _ = read(str(tmp_path))
    assert [s["status"] for s in record["stages"]] == ["ok", "error", "ok"]
    assert "injected" in record["stages"][1]["error"]


def test_the_watchdog_ends_a_hung_stage_and_keeps_what_was_measured(tmp_path):
    script = f"""
import sys, time
sys.path.append({BENCHMARKS!r})
from gpu_harness import Harness, Stage
harness = Harness({str(tmp_path)!r}, total_s=1.0, grace_s=0.3)
harness.start_watchdog()
harness.run_stage(Stage("done", "ends in time", lambda until: {{"notes": ["kept"]}}, 5, 0))
def hangs(until):
    harness.progress("hangs", {{"notes": ["half of it"]}})
    time.sleep(60)
harness.run_stage(Stage("hangs", "never returns", hangs, 5, 0))
"""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 124, done.stderr
    assert time.perf_counter() - began < 30
    assert "watchdog: deadline of 1 s passed during stage 'hangs'" in done.stdout
    record, table = read(str(tmp_path))
    assert record["stages"][0]["result"]["notes"] == ["kept"]
    assert record["in_progress"]["result"]["notes"] == ["half of it"]
    assert "during stage 'hangs'" in record["watchdog"]
    assert "UNFINISHED" in table and "- half of it" in table


def test_a_pack_padded_to_one_shape_keeps_its_tree_mask():
    torch = pytest.importorskip("torch")
    from gpu_measure import _padded

    from StaICC.backends import tree_pack
    sequences = [[1, 5, 6, 7, 8], [1, 5, 6, 9], [1, 4]]
    pack = tree_pack.plan_packs(sequences, [[len(s) - 1] for s in sequences], max_tokens=64, max_read_positions=8)[0]
    padded = _padded(pack, len(pack.tokens) + 5, pad_id=0)
    assert padded.tokens == [0] * 5 + pack.tokens and padded.positions == [0] * 5 + pack.positions
    assert padded.reads == [(flat + 5, i, r) for flat, i, r in pack.reads]
    original = tree_pack.dense_mask(torch, pack.ends, "cpu")[0, 0]
    mask = tree_pack.dense_mask(torch, padded.ends, "cpu")[0, 0]
    assert torch.equal(mask[5:, 5:], original)  # the real tokens see what they saw
    assert torch.equal(mask[:5, :5], torch.eye(5, dtype=torch.bool))  # a padding token sees itself only
    assert not mask[5:, :5].any() and not mask[:5, 5:].any()


def test_the_stack_is_extrapolated_by_the_line_through_two_layer_counts():
    pytest.importorskip("torch")
    import kernel_table
    from gpu_measure import Measure
    from gpu_stages_more import _extrapolated

    def run(layers, seconds):
        m = Measure(f"tree, {layers} layers", "one dataset", groups=1, groups_done=1, prompts=10, seconds=seconds,
                    given=1000, computed=600, reads=10, logit_positions=10)
        return layers, m, kernel_table.Shape(100 * layers + 7, 4, 10)

    ctx = SimpleNamespace(config=SimpleNamespace(stack_full_layers=32), facts={})
    result = _extrapolated(ctx, [run(2, 3.0), run(8, 6.0)], prompts=10)  # 0.5 s per layer, 2 s for the rest
    assert result["seconds"] == pytest.approx(2.0 + 0.5 * 32)
    flops = {layers: 2 * (100 * layers + 7) * 600 + 2 * 4 * 10 * 10 for layers in (8, 32)}
    assert result["by_flops"] == pytest.approx(6.0 * flops[32] / flops[8])
    assert ctx.facts["stack"]["seconds"] == pytest.approx(18.0)
    noisy = _extrapolated(ctx, [run(2, 3.0), run(8, 2.9)], prompts=10)  # a negative slope is noise, not a fit
    assert noisy["seconds"] is None and "NOT extrapolated" in noisy["notes"][0]
