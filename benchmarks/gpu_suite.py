"""One prepared run on a lent GPU: the suite's packings, agreement with float32, the route row, an 8B-shaped stack.

Run once, by ``benchmarks/gpu_run.sh OUT`` (which sets the clock and the log); stages in
priority order, each guarded and budgeted by :mod:`gpu_harness`, each written to
``OUT/gpu_results.json`` and ``OUT/gpu_table.md`` as it ends:

0. ``device``: the GPU, the library versions, a measured bf16 product rate;
   ``setup``: the suite's distinct prompts, a BPE tokenizer trained on the demonstrations,
   every prompt tokenized once, a random model of Llama-3.2-1B's shape in bf16;
1. ``suite``: ``packing="rows"`` and ``"prefix"`` on a seeded sample of the prompts
   (extrapolated to the suite by tokens given), ``"tree"`` on the whole suite after a
   timed warm-up that picks its attention (FlexAttention, FlexAttention padded to one
   shape, or a dense mask: the first that works and agrees with rows);
2. ``agreement``: argmax agreement and the largest probability difference of every
   packing against a float32 copy of the model, on a seeded sample;
3. ``route``: Normal on TREC and rotten_tomatoes through the ``hf`` backend, under two
   ``requests_per_call`` and the packings: each metric's largest difference;
4. ``runner``: the whole suite through ``run_suite`` and the ``hf`` backend with the
   fastest packing (what a user waits for);
5. ``stack``: Llama-3.1-8B's width with a few layers, one dataset's suite prompts, the
   fastest packing; the time at 32 layers from a line through two layer counts;
6. ``prefix-full``: ``"prefix"`` on the whole suite, with whatever time is left.

``--smoke`` shrinks everything (tiny model, three datasets' first prompts, CPU, short
budgets) to run the same code end to end here; ``--inject-failure STAGE`` makes a stage
raise, ``--deadline S`` shortens the run (later stages are then skipped).

    PYTHONUNBUFFERED=1 bash benchmarks/gpu_run.sh "$OUT"          # the device run
    bash benchmarks/gpu_run.sh /tmp/out --smoke                    # here, on CPU
"""
import argparse
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]  # a checkout, not installed

from gpu_harness import Harness, Stage  # noqa: E402
import gpu_stages  # noqa: E402


@dataclass(frozen=True)
class Config:
    """Everything that differs between the device run and the smoke run."""

    device: str
    datasets: Tuple[Any, ...]
    prompts_per_dataset: Optional[int]  # the first N distinct prompts of each dataset (None: all)
    preset: Optional[str]  # model_presets name, or None for the tiny shape below
    tiny_hidden: int
    tiny_layers: int
    vocab: int  # tokenizer merges
    rows_fraction: float
    prefix_fraction: float
    agreement_prompts: int
    warmup_prompts: int
    route_datasets: Tuple[str, ...]
    route_limit: Optional[int]
    route_calls: Tuple[int, int]
    runner_limit: Optional[int]
    stack_shape: Dict[str, Any]
    stack_layers: Tuple[int, int]
    stack_full_layers: int
    stack_dataset: str
    tree_attention: str
    total_s: float
    prior_rate: Optional[float]  # tokens given per second assumed before a first measurement
    budgets: Dict[str, Tuple[float, float]] = field(default_factory=dict)  # stage -> (budget, needs)
    sub_budgets: Dict[str, float] = field(default_factory=dict)


LLAMA_8B = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "tie_word_embeddings": False}

DEVICE = Config(
    device="cuda", datasets=tuple(range(10)), prompts_per_dataset=None, preset="llama-3.2-1b", tiny_hidden=0,
    tiny_layers=0, vocab=32000, rows_fraction=0.10, prefix_fraction=0.10, agreement_prompts=2000,
    warmup_prompts=768, route_datasets=("TREC", "rotten_tomatoes"), route_limit=None, route_calls=(2048, 64),
    runner_limit=None, stack_shape=LLAMA_8B, stack_layers=(2, 8), stack_full_layers=32,
    stack_dataset="rotten_tomatoes", tree_attention="auto", total_s=470.0, prior_rate=100_000.0,
    budgets={"device": (30, 5), "setup": (150, 30), "suite": (250, 60), "agreement": (60, 15), "route": (60, 15),
             "runner": (160, 30), "stack": (100, 40), "prefix-full": (400, 30)},
    sub_budgets={"rows": 45, "tree-warmup": 150, "tree-warmup-variant": 25, "prefix-reserve": 25,
                 "runner-overhead": 25, "stack-warmup": 60})

SMOKE = replace(
    DEVICE, device="cpu", datasets=("TREC", "rotten_tomatoes", "GLUE-SST2"), prompts_per_dataset=120, preset=None,
    tiny_hidden=64, tiny_layers=2, vocab=1024, rows_fraction=0.25, prefix_fraction=0.25, agreement_prompts=60,
    warmup_prompts=40, route_limit=8, route_calls=(64, 7), runner_limit=5,
    stack_shape={"hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256,
                 "tie_word_embeddings": False},
    stack_layers=(1, 4), stack_full_layers=8, total_s=420.0, prior_rate=None,
    budgets={"device": (20, 2), "setup": (90, 10), "suite": (300, 10), "agreement": (40, 5), "route": (60, 5),
             "runner": (90, 5), "stack": (120, 5), "prefix-full": (60, 5)},
    sub_budgets={"rows": 30, "tree-warmup": 240, "tree-warmup-variant": 5, "prefix-reserve": 8,
                 "runner-overhead": 10, "stack-warmup": 20})


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for gpu_results.json and gpu_table.md")
    parser.add_argument("--smoke", action="store_true", help="tiny model, few prompts, CPU: the same code, quickly")
    parser.add_argument("--device", default=None, help="override the device (default: cuda; cpu with --smoke)")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds from the run's start (STAICC_GPU_T0, else now) by which it ends")
    parser.add_argument("--inject-failure", default="",
                        help="comma-separated stage names (or the suite's steps rows, tree-run, prefix) that raise once")
    parser.add_argument("--only", default="", help="comma-separated stage names to run (device and setup always run)")
    parser.add_argument("--tree-attention", default=None, choices=["auto", "flex", "dense"],
                        help="tree packing's attention variants to try (auto: flex then fallbacks on CUDA, "
                             "dense on CPU)")
    return parser.parse_args(argv)


def config_of(args: argparse.Namespace) -> Config:
    config = SMOKE if args.smoke else DEVICE
    if args.device:
        config = replace(config, device=args.device)
    if args.deadline:
        config = replace(config, total_s=args.deadline)
    if args.tree_attention:
        config = replace(config, tree_attention=args.tree_attention)
    return config


def started_at() -> float:
    """perf_counter of the run's start: the wrapper's clock (STAICC_GPU_T0, epoch seconds) when it gave one."""
    now = time.perf_counter()
    t0 = os.environ.get("STAICC_GPU_T0")
    try:
        return now - max(0.0, time.time() - float(t0)) if t0 else now
    except ValueError:
        return now


def git_commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE.parent, capture_output=True,
                              text=True, timeout=5)
        return done.stdout.strip() or "unknown (no git here)"
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git here)"


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    config = config_of(args)
    harness = Harness(args.out, config.total_s, started=started_at(),
                      inject={n.strip() for n in args.inject_failure.split(",") if n.strip()})
    harness.record.update(title=f"StaICC scoring engine on one GPU{' (SMOKE RUN, CPU)' if args.smoke else ''}",
                          mode="smoke" if args.smoke else "device", commit=git_commit(),
                          date=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                          config=dict(vars(config)))
    harness.record["header"] = {"mode": harness.record["mode"], "commit": harness.record["commit"],
                                "date": harness.record["date"]}
    harness.write()
    harness.start_watchdog()
    random.seed(0)
    context = gpu_stages.Context(config, harness)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    for name, title, run in gpu_stages.ordered(context):
        if only and name not in only | {"device", "setup"}:
            continue
        budget, needs = config.budgets[name]
        harness.run_stage(Stage(name, title, run, budget, needs))
    gpu_stages.summarize(context)
    harness.record["elapsed_s"] = round(harness.elapsed(), 1)
    harness.write()
    with open(os.path.join(args.out, "gpu_table.md"), encoding="utf-8") as table:
        text = table.read()
    print("\n" + text, flush=True)
    summary = text.split("\n## Summary\n", 1)[-1].split("\n## ", 1)[0]  # again last: the end of the output is read
    print(f"[harness] summary (also at the top of gpu_table.md):\n{summary}", flush=True)
    print(f"[harness] done in {harness.elapsed():.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
