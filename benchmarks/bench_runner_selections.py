#!/usr/bin/env python3
"""What the runner's selections cost, measured in one run: shards, dry runs, the final run after a merge.

    python benchmarks/bench_runner_selections.py [--benchmarks all] [--datasets 0 4 5] [--limit N] [--skip-hf]

The default workload is the standard suite (``--benchmarks all``, the ten datasets).

Every measurement runs in its own process (a fresh interpreter, so peak memory is that run's).

1. Prompt pieces written by a full run, ``--shard 0/2`` and ``--shard 1/2`` (unit ``query``; the
   reference backend): prompts written, the pieces joined into them (instruction, one per
   demonstration, the query), the pieces rendered (a demonstration's or a query's text made
   for the first time) and the prompt characters, with each shard's ratio to the full run.
2. A dry run against a run: framework CPU seconds (``time.process_time`` around the call,
   imports excluded) and peak RSS, with the built-in ``reference`` model (``staicc run`` in
   process, through ``StaICC.cli.main``) and with a trivial function (``run_suite``).
3. The final run after ``cache merge`` of a 2-shard run of a tiny random-weight HF Llama
   (``--benchmarks Normal,GLER --datasets 0 4 --limit 16``): whether torch was imported, CPU
   seconds and peak RSS of the final run, beside those of a shard (which loads the model).
   Skipped without torch and transformers.

Never imported by the package.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def child(spec: dict) -> dict:
    """One measured run in this process; returns its figures."""
    import resource
    import time
    if spec["kind"] == "pieces":
        counters = _count_pieces()
    started = time.process_time()
    if spec["kind"] in ("pieces", "cli"):
        import contextlib
        import io
        from StaICC.cli import main
        with contextlib.redirect_stdout(io.StringIO()) as out:
            status = main(spec["argv"])
        if status != 0:
            raise SystemExit(f"staicc {' '.join(spec['argv'])} exited with {status}")
        printed = out.getvalue()
    else:  # a trivial function through run_suite
        from StaICC.engine.selection import Everything, Nothing, QuerySubset
        from StaICC.subbenchmarks.suite import run_suite
        selection = Nothing() if spec["dry"] else Everything()
        subset = QuerySubset.first(spec["limit"]) if spec["limit"] else None
        result = run_suite(lambda **_request: 0, spec["benchmarks"], spec["datasets"],
                           selection=selection, test_items=subset)
        printed = json.dumps({k: result.metadata[k] for k in ("prompts", "distinct_prompts")})
    cpu = time.process_time() - started
    figures = {"cpu": cpu, "rss_mb": _peak_mb(resource),
               "torch": "torch" in sys.modules, "printed": printed.strip().splitlines()[-1:]}
    if spec["kind"] == "pieces":
        figures.update(counters)
    return figures


def _peak_mb(resource) -> float:
    """This process's peak resident memory: VmHWM (the current image's, so not the parent's copied at fork
    time, which getrusage's maxrss keeps across exec on Linux), else maxrss."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _count_pieces() -> dict:
    """Count, from here on, the prompts written, the pieces joined into them and the pieces rendered."""
    from StaICC.prompt import pieces, template
    counts = {"prompts": 0, "joined": 0, "rendered": 0, "characters": 0}
    write_many = template.CompiledTemplate.write_many

    def counted_write_many(self, queries, noise_stream, pieces_, segments=None, only=None):
        queries = list(queries)
        prompts = write_many(self, queries, noise_stream, pieces_, segments, only)
        chosen = range(len(queries)) if only is None else only
        counts["prompts"] += len(prompts)
        counts["joined"] += sum(len(queries[i][0]) + 2 for i in chosen)
        counts["characters"] += sum(len(p) if isinstance(p, str) else sum(map(len, p)) for p in prompts)
        return prompts
    template.CompiledTemplate.write_many = counted_write_many
    for table in (pieces.DemonstrationTexts, pieces.QueryTexts):
        missing = table.__missing__

        def counted(self, key, missing=missing):
            counts["rendered"] += 1
            return missing(self, key)
        table.__missing__ = counted
    return counts


def measured(spec: dict, env: dict = None) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                          capture_output=True, text=True, cwd=ROOT,
                          env=dict(env or os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1"))
    if done.returncode != 0:
        raise SystemExit(f"a measured run failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def pieces_table(workload: list, work: str) -> None:
    print("1. prompt pieces written (reference backend, unit query)")
    runs = {"full run": [], "--shard 0/2": ["--shard", "0/2"], "--shard 1/2": ["--shard", "1/2"]}
    figures = {}
    for name, extra in runs.items():
        cache = os.path.join(work, name.replace(" ", "").replace("/", "-").replace("--", "") + ".sqlite")
        figures[name] = measured({"kind": "pieces", "argv": ["run", *workload, "--cache", cache, *extra]})
    full = figures["full run"]
    print(f"{'run':<14}{'prompts':>10}{'pieces joined':>15}{'pieces rendered':>17}{'characters':>14}{'ratio':>8}")
    for name, f in figures.items():
        print(f"{name:<14}{f['prompts']:>10}{f['joined']:>15}{f['rendered']:>17}{f['characters']:>14}"
              f"{f['joined'] / full['joined']:>8.2f}")
    print("(ratio: pieces joined, against the full run)\n")


def dry_run_table(workload: list, benchmarks: str, datasets: list, limit: int) -> None:
    print("2. dry run against a run: framework CPU (process time around the call) and peak RSS")
    print(f"{'model':<20}{'run CPU s':>11}{'dry CPU s':>11}{'ratio':>8}{'run MB':>9}{'dry MB':>9}{'ratio':>8}")
    pairs = {"reference (CLI)": ({"kind": "cli", "argv": ["run", *workload]},
                                 {"kind": "cli", "argv": ["run", *workload, "--dry-run"]}),
             "trivial function": tuple({"kind": "function", "dry": dry, "benchmarks": benchmarks, "datasets": datasets,
                                        "limit": limit} for dry in (False, True))}
    for name, (run, dry) in pairs.items():
        a, b = measured(run), measured(dry)
        print(f"{name:<20}{a['cpu']:>11.2f}{b['cpu']:>11.2f}{b['cpu'] / a['cpu']:>8.2f}"
              f"{a['rss_mb']:>9.0f}{b['rss_mb']:>9.0f}{b['rss_mb'] / a['rss_mb']:>8.2f}")
    print()


def final_run_table(work: str) -> None:
    print("3. the final run after `cache merge` of a 2-shard tiny HF run")
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        print("skipped: torch and transformers are not installed\n")
        return
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from backend_helpers import save_tiny
    model = save_tiny(os.path.join(work, "tiny"))
    run = ["run", "--model", "hf", "--model-args", f"pretrained={model}", "--benchmarks", "Normal,GLER",
           "--datasets", "0", "4", "--limit", "16", "--no-progress"]
    caches = [os.path.join(work, f"hf{i}.sqlite") for i in range(2)]
    shard = [measured({"kind": "cli", "argv": [*run, "--shard", f"{i}/2", "--cache", caches[i]]}) for i in range(2)]
    from StaICC.cache.merge import merge_caches
    merge_caches(os.path.join(work, "merged.sqlite"), caches)
    final = measured({"kind": "cli", "argv": [*run, "--cache", os.path.join(work, "merged.sqlite")]})
    print(f"{'process':<18}{'torch imported':>16}{'CPU s':>9}{'peak MB':>9}")
    for name, f in (("shard 0/2", shard[0]), ("shard 1/2", shard[1]), ("final run", final)):
        print(f"{name:<18}{str(f['torch']):>16}{f['cpu']:>9.2f}{f['rss_mb']:>9.0f}")
    print(f"final run: {final['printed'][0] if final['printed'] else ''}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--benchmarks", default="all")
    parser.add_argument("--datasets", nargs="+", help="dataset indexes (default: the ten standard datasets)")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--skip-hf", action="store_true", help="leave out part 3")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    workload = ["--benchmarks", args.benchmarks, *(["--datasets", *args.datasets] if args.datasets else []),
                "--no-progress"]
    if args.limit:
        workload += ["--limit", str(args.limit)]
    print(f"workload: staicc run {' '.join(workload)}  (Python {sys.version.split()[0]}, {os.cpu_count()} cores)\n")
    with tempfile.TemporaryDirectory() as work:
        pieces_table(workload, work)
        dry_run_table(workload, args.benchmarks, [int(d) for d in args.datasets] if args.datasets else None,
                      args.limit)
        if not args.skip_hf:
            final_run_table(work)


if __name__ == "__main__":
    main()
