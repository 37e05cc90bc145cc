#!/usr/bin/env python3
"""Batch invariance on one device: every ``hf`` route of one model, per-prompt scores compared bit for bit.

Run by ``benchmarks/gpu_invariance.sh`` (one prepared GPU run, at most 8 minutes); on CPU with
``--preset tiny --limit 5`` it runs the same stages in minutes (a dry run of the script).  Stages,
each through ``staicc run --model hf`` as a user runs it, one process per run:

1. the route matrix: packing tree / prefix / rows x 7 / 64 / 2,048 requests per call, and ``--shard 2``
   (query unit, merged), on Normal over TREC and rotten_tomatoes; every prompt's prediction compared
   bit for bit with the baseline (packing tree, 2,048 requests per call);
2. the same baseline and one route under ``numerics=fast``, for what the fast forward moves;
3. the whole suite (``--benchmarks all``) with ``numerics=invariant`` and ``numerics=fast``: wall time each
   and their ratio (the user's path: loading, tokenizing, planning, scoring, metrics, writing).

Writes OUT/invariance.md (the tables) and OUT/invariance.json, and prints them.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]


def staicc_run(model: str, out: Optional[str], model_args: str, selection: List[str], extra: List[str],
               budget: float) -> Dict[str, Any]:
    """One ``staicc run`` in its own process (``out`` None: a shard, answers to its cache only); wall time, status."""
    written = ["--output-dir", out, "--log-samples"] if out is not None else []
    command = [sys.executable, "-m", "StaICC", "run", "--model", "hf", "--model-args",
               f"pretrained={model}{model_args}", *selection, *written, "--no-progress", *extra]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=max(5.0, budget))
        status, tail = done.returncode, done.stderr[-600:]
    except subprocess.TimeoutExpired:
        status, tail = 124, "stopped by the script's deadline"
    return {"seconds": round(time.perf_counter() - started, 1), "status": status, "stderr": tail}


def predictions(directory: str) -> Dict[str, List[float]]:
    """Every prompt's prediction row of a run directory, by (part, dataset, query, pass, repeat)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from route_workload import predictions_of
    from StaICC.report.runs import load_run
    out: Dict[str, float] = {}
    for name, part in load_run(directory).parts.items():
        for dataset, records in (part.records or {}).items():
            out.update(predictions_of(name, dataset, records))
    return out


def compared(reference: Dict[str, float], other: Dict[str, float]) -> Dict[str, Any]:
    """Prompt values compared bit for bit: how many differ, and the largest difference."""
    keys = set(reference) & set(other)
    differing = [k for k in keys if reference[k] != other[k]]
    largest = max((abs(reference[k] - other[k]) for k in differing), default=0.0)
    return {"values": len(keys), "differing": len(differing), "largest": largest,
            "missing": len(set(reference) ^ set(other))}


def route_matrix(args: argparse.Namespace, deadline: float) -> List[Dict[str, Any]]:
    selection = ["--benchmarks", "Normal", "--datasets", "TREC", "rotten_tomatoes"] + (
        ["--limit", str(args.limit)] if args.limit else [])
    routes = [("baseline: tree, 2048 per call", ",numerics=invariant,packing=tree,requests_per_call=2048", [])]
    routes += [(f"{p}, {n} per call", f",numerics=invariant,packing={p},requests_per_call={n}", [])
               for p in ("tree", "prefix", "rows") for n in (7, 64, 2048) if (p, n) != ("tree", 2048)]
    routes += [("--shard 2 (query) + merge", ",numerics=invariant,packing=tree,requests_per_call=2048", ["shard"]),
               ("numerics=fast: tree, 2048 per call", ",packing=tree,requests_per_call=2048,numerics=fast", []),
               ("numerics=fast: prefix, 64 per call", ",packing=prefix,requests_per_call=64,numerics=fast", [])]
    rows, reference = [], None
    for label, model_args, flags in routes:
        out = os.path.join(args.out, "routes", str(len(rows)))
        left = deadline - time.time()
        if left < 20:
            rows.append({"route": label, "skipped": "out of time"})
            continue
        if flags == ["shard"]:
            result = shard_run(args.model, out, model_args, selection, left)
        else:
            result = staicc_run(args.model, out, model_args, selection, [], left)
        row = {"route": label, "seconds": result["seconds"], "status": result["status"]}
        if result["status"] == 0:
            values = predictions(out)
            if reference is None:
                reference = values
            row.update(compared(reference, values))
        else:
            row["stderr"] = result["stderr"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def shard_run(model: str, out: str, model_args: str, selection: List[str], budget: float) -> Dict[str, Any]:
    """``--shard 0/2`` and ``1/2`` into their caches, ``cache merge``, the final run over the merged cache."""
    started = time.perf_counter()
    caches = [f"{out}.shard{i}.sqlite" for i in range(2)]
    for i, cache in enumerate(caches):
        part = staicc_run(model, None, model_args, selection, ["--shard", f"{i}/2", "--cache", cache],
                          budget - (time.perf_counter() - started))
        if part["status"] != 0:
            return part
    merged = f"{out}.sqlite"
    subprocess.run([sys.executable, "-m", "StaICC", "cache", "merge", merged, *caches], cwd=ROOT,
                   capture_output=True, text=True, check=False)
    final = staicc_run(model, out, model_args, selection, ["--cache", merged], budget - (time.perf_counter() - started))
    final["seconds"] = round(time.perf_counter() - started, 1)
    return final


def suite_times(args: argparse.Namespace, deadline: float) -> List[Dict[str, Any]]:
    """The whole suite through ``staicc run`` with each numerics, as a user runs it."""
    selection = ["--benchmarks", "all"] + (["--limit", str(args.limit)] if args.limit else [])
    rows = []
    for numerics in ("invariant", "fast"):
        left = deadline - time.time()
        if left < 30:
            rows.append({"numerics": numerics, "skipped": "out of time"})
            continue
        result = staicc_run(args.model, os.path.join(args.out, f"suite-{numerics}"), f",numerics={numerics}",
                            selection, [], left)
        rows.append({"numerics": numerics, **{k: result[k] for k in ("seconds", "status")}})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def table(routes: List[Dict[str, Any]], suite: List[Dict[str, Any]], device: str) -> str:
    lines = [f"Batch invariance, {device}; per-prompt prediction values compared bit for bit with the baseline", "",
             "| route | values | differing | largest difference | s |", "|---|---:|---:|---:|---:|"]
    for row in routes:
        if "values" in row:
            lines.append(f"| {row['route']} | {row['values']} | {row['differing']} | {row['largest']:.3g} | "
                         f"{row['seconds']} |")
        else:
            lines.append(f"| {row['route']} | not run: {row.get('skipped') or row.get('stderr', '')[-120:]!r} | | | |")
    lines += ["", "| the suite through staicc run | wall s | status |", "|---|---:|---:|"]
    lines += [f"| numerics={r['numerics']} | {r.get('seconds', r.get('skipped'))} | {r.get('status', '')} |"
              for r in suite]
    done = {r["numerics"]: r["seconds"] for r in suite if r.get("status") == 0}
    if len(done) == 2:
        lines.append(f"\ninvariant / fast: {done['invariant'] / done['fast']:.2f}x")
    return "\n".join(lines) + "\n"


def device_name() -> str:
    import torch
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    return f"CPU, torch {torch.__version__}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", help="a model directory (default: build --preset into OUT/model)")
    parser.add_argument("--preset", default="1b", choices=["tiny", "small", "1b"])
    parser.add_argument("--limit", type=int, default=0, help="test items per dataset (0: all)")
    parser.add_argument("--seconds", type=float, default=450, help="stop starting runs after this long")
    args = parser.parse_args(argv)
    deadline = time.time() + args.seconds
    os.makedirs(args.out, exist_ok=True)
    if args.model is None:
        from make_random_model import demonstration_texts, make_model
        args.model = os.path.join(args.out, "model")
        if not os.path.isfile(os.path.join(args.model, "config.json")):
            make_model(args.preset, args.model, demonstration_texts())
    routes = route_matrix(args, deadline)
    suite = suite_times(args, deadline)
    text = table(routes, suite, device_name())
    print(text)
    with open(os.path.join(args.out, "invariance.md"), "w", encoding="utf-8") as handle:
        handle.write(text)
    with open(os.path.join(args.out, "invariance.json"), "w", encoding="utf-8") as handle:
        json.dump({"device": device_name(), "routes": routes, "suite": suite}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
