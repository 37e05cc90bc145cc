"""The first stages of ``gpu_suite.py``: the device, the workload, the suite's packings, agreement with float32.

Each stage is ``stage(context, until) -> result`` (``until``: its deadline on the
perf_counter clock) and returns ``{"notes": [...], "tables": [...], ...}`` for the
harness to record; what later stages need (the model, the token ids, the fastest
packing) goes into the shared :class:`Context`.  The later stages are in
:mod:`gpu_stages_more`.
"""
import copy
import gc
import os
import random
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import kernel_table
from gpu_measure import COUNTERS, TREE_VARIANTS, Measure, apply_variant, instrument, measure, score_ids, use_variant

#: the README's peak for the FLOP bound (an effective bf16 dense figure for an H100-class GPU)
README_PEAK = 400e12
#: a tree variant is kept only when its argmax agrees with one row per prompt on this share of the warm-up
MIN_WARMUP_AGREEMENT = 90.0


@dataclass
class Context:
    """What the stages share."""

    config: Any
    harness: Any
    torch: Any = None
    model: Any = None
    tokenizer: Any = None
    model_name: str = ""
    groups: List[Any] = field(default_factory=list)
    members: List[List[int]] = field(default_factory=list)  # per group: its prompts' global indices
    ids: List[List[int]] = field(default_factory=list)  # per global index: the prompt's token ids
    order: List[int] = field(default_factory=list)  # a seeded permutation of the global indices
    shape: Any = None
    peak_measured: Optional[float] = None
    measures: Dict[str, Measure] = field(default_factory=dict)
    suite_seconds: Dict[str, float] = field(default_factory=dict)  # packing -> suite seconds (maybe extrapolated)
    tree_variant: Optional[str] = None
    tree_scorer: Any = None
    best: Optional[str] = None
    facts: Dict[str, Any] = field(default_factory=dict)  # for the summary

    @property
    def cuda(self) -> bool:
        return self.config.device.startswith("cuda")

    @property
    def total_given(self) -> int:
        return sum(len(ids) for ids in self.ids)

    def synchronize(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def sample(self, fraction: float) -> set:
        return set(self.order[:max(1, round(fraction * len(self.order)))])

    def selection(self, chosen: Optional[set] = None) -> List[Tuple[List[int], List[str]]]:
        """Per group (dataset), its chosen global indices in the runner's order, and its labels."""
        return [([i for i in members if chosen is None or i in chosen], group.labels)
                for members, group in zip(self.members, self.groups)]

    def scorer(self, packing: str, model: Any = None) -> Any:
        from StaICC.backends.causal_lm import CausalLMScorer
        made = CausalLMScorer(model if model is not None else self.model, self.tokenizer, packing=packing)
        return apply_variant(made, self.tree_variant) if packing == "tree" else made

    def bound(self, given: int, reads: int, peak: Optional[float], shape: Any = None) -> Optional[float]:
        """The no-sharing FLOP bound in seconds (``kernel_table``'s formula) at ``peak`` FLOP/s."""
        return (shape or self.shape).flops(given, reads) / peak if peak else None


def ordered(context: Context) -> List[Tuple[str, str, Callable[[float], Dict[str, Any]]]]:
    """The stages in priority order, each bound to the context."""
    import gpu_stages_more as more
    stages = [("device", "the GPU, the libraries, a measured product rate", stage_device),
              ("setup", "the suite's prompts, the tokenizer, the 1B-shaped model", stage_setup),
              ("suite", "the suite's distinct prompts: rows, tree, prefix", stage_suite),
              ("agreement", "argmax agreement with a float32 copy of the model", stage_agreement),
              ("route", "the GPU row of the route matrix: Normal through the hf backend", more.stage_route),
              ("runner", "the whole suite through run_suite and the hf backend", more.stage_runner),
              ("stack", "an 8B-wide layer stack, extrapolated by layer count", more.stage_stack),
              ("prefix-full", "packing=prefix on the whole suite, with the time left", more.stage_prefix_full)]
    return [(name, title, _bound(function, context)) for name, title, function in stages]


def _bound(function: Callable[[Context, float], Dict[str, Any]], context: Context) -> Callable[[float], Any]:
    def run(until: float) -> Dict[str, Any]:
        if function not in (stage_device, stage_setup) and context.model is None:
            from gpu_harness import StageSkipped
            raise StageSkipped("no model: the setup stage did not finish")
        return function(context, until)
    return run


# ------------------------------------------------------------------ 0. device
def stage_device(ctx: Context, _until: float) -> Dict[str, Any]:
    import torch
    import transformers
    ctx.torch = torch
    facts: Dict[str, Any] = {"python": ctx.harness.record.get("python"), "torch": torch.__version__,
                             "transformers": transformers.__version__, "tokenizers": _version("tokenizers"),
                             "numpy": _version("numpy"), "triton": _version("triton")}
    if ctx.cuda:
        if not torch.cuda.is_available():
            raise RuntimeError(f"torch {torch.__version__} sees no CUDA device")
        properties = torch.cuda.get_device_properties(0)
        facts.update(device=torch.cuda.get_device_name(0), capability=".".join(map(str, properties.major_minor()))
                     if hasattr(properties, "major_minor") else f"{properties.major}.{properties.minor}",
                     memory_gib=round(properties.total_memory / 2 ** 30, 1), cuda=torch.version.cuda,
                     cudnn=torch.backends.cudnn.version(), tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
                     nvidia_smi=_nvidia_smi(), cpu_cores=os.cpu_count())
    else:
        facts.update(device=f"CPU, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads")
    dtype = torch.bfloat16 if ctx.cuda else torch.float32
    began = time.perf_counter()
    torch.ones(1, device=ctx.config.device).add_(1).cpu()  # the CUDA context and a first kernel
    facts["first_kernel_s"] = round(time.perf_counter() - began, 2)
    ctx.peak_measured = _product_rate(torch, ctx.config.device, dtype)
    facts["measured_product_tflops"] = float(f"{ctx.peak_measured / 1e12:.3g}")
    ctx.harness.record["header"].update(device=facts["device"], torch=facts["torch"],
                                        transformers=facts["transformers"], cuda=facts.get("cuda", "none"))
    ctx.facts["device"] = facts
    notes = [f"{facts['device']}; torch {facts['torch']}, transformers {facts['transformers']}, "
             f"CUDA {facts.get('cuda', 'none')}, triton {facts['triton']}",
             f"device context and a first kernel: {facts['first_kernel_s']} s",
             f"{dtype} {_product_n(ctx.config.device)}-square product: {facts['measured_product_tflops']} TFLOP/s "
             f"measured (median of 10); the FLOP bounds below are given at the README's 400 TFLOP/s and at this "
             f"measured rate"]
    return {"facts": facts, "notes": notes}


def _version(name: str) -> str:
    try:
        return __import__(name).__version__
    except Exception:  # absent or broken: say so in the table
        return "not installed"


def _nvidia_smi() -> str:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.max.sm",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        return done.stdout.strip() or done.stderr.strip()
    except (OSError, subprocess.SubprocessError) as error:
        return f"nvidia-smi failed: {error}"


def _product_n(device: str) -> int:
    return 8192 if device.startswith("cuda") else 512


def _product_rate(torch: Any, device: str, dtype: Any) -> float:
    n = _product_n(device)
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    times = []
    for round_number in range(13):
        sync()
        start = time.perf_counter()
        a @ b
        sync()
        if round_number >= 3:
            times.append(time.perf_counter() - start)
    return 2 * n ** 3 / sorted(times)[len(times) // 2]


# ------------------------------------------------------------------ setup
def stage_setup(ctx: Context, _until: float) -> Dict[str, Any]:
    from argparse import Namespace

    from bench_kernel import load_model, suite_groups
    cfg = ctx.config
    ctx.torch = ctx.torch or __import__("torch")
    started = time.perf_counter()
    ctx.groups, texts = suite_groups(list(cfg.datasets), 4, cfg.prompts_per_dataset)
    built = time.perf_counter()
    args = Namespace(model=None, vocab=cfg.vocab, preset=cfg.preset, hidden=cfg.tiny_hidden, layers=cfg.tiny_layers,
                     device=cfg.device, dtype=None)
    ctx.model, ctx.tokenizer, ctx.model_name = load_model(args, texts)
    ctx.synchronize()
    loaded = time.perf_counter()
    ctx.ids, ctx.members = [], []
    for group in ctx.groups:
        encoded = ctx.tokenizer(group.prompts)["input_ids"]
        ctx.members.append(list(range(len(ctx.ids), len(ctx.ids) + len(encoded))))
        ctx.ids.extend(list(ids) for ids in encoded)
    tokenized = time.perf_counter()
    ctx.order = list(range(len(ctx.ids)))
    random.Random(0).shuffle(ctx.order)
    ctx.shape = kernel_table.shape_of(ctx.model)
    params = sum(p.numel() for p in ctx.model.parameters())
    model = (f"{ctx.model_name}: {params / 1e6:.1f} M parameters, {ctx.shape.nonembedding / 1e6:.1f} M outside the "
             f"embedding and head, {ctx.model.config.num_hidden_layers} layers, hidden {ctx.shape.hidden}, vocabulary "
             f"{ctx.shape.vocab}, {ctx.model.dtype}, attention {ctx.model.config._attn_implementation}")
    ctx.harness.record["header"]["model"] = model
    ctx.facts["workload"] = {"prompts": len(ctx.ids), "tokens": ctx.total_given, "datasets": len(ctx.groups),
                             "tokenizer_vocab": len(ctx.tokenizer)}
    return {"workload": ctx.facts["workload"], "notes": [
        model,
        f"{len(ctx.ids):,} distinct prompts of {len(ctx.groups)} datasets (k=4), {ctx.total_given:,} tokens, mean "
        f"{ctx.total_given / max(1, len(ctx.ids)):.0f}; BPE tokenizer of {len(ctx.tokenizer):,} tokens",
        f"suite planned in {built - started:.1f} s; tokenizer trained and model built in {loaded - built:.1f} s; "
        f"every prompt tokenized once in {tokenized - loaded:.1f} s (shared by all packings, in none of their times)"]}


# ------------------------------------------------------------------ 1. the suite's packings
SUITE_COLUMNS = ["method", "scope", "prompts", "measured s", "suite s", "tokens given", "tokens run", "run/given",
                 "TFLOP/s", "x bound @400", "x bound @measured", "forwards", "peak MiB", "OOM retries", "planning s"]


def stage_suite(ctx: Context, until: float) -> Dict[str, Any]:
    instrument()
    cfg, notes = ctx.config, []
    rows = ctx.scorer("rows")
    first = ctx.members[0][:1024]
    began = time.perf_counter()
    score_ids(rows, [ctx.ids[i] for i in first], ctx.groups[0].labels)  # first kernels, the allocator's blocks
    ctx.synchronize()
    notes.append(f"warm-up (one row per prompt, {len(first)} prompts): {time.perf_counter() - began:.1f} s")
    rows_until = min(until, time.perf_counter() + cfg.sub_budgets["rows"])
    _guarded(notes, "rows", lambda: ctx.harness.maybe_fail("rows") or add_measure(ctx, measure(
        ctx.torch, rows, "rows", f"{cfg.rows_fraction:.0%} seeded sample", ctx.selection(ctx.sample(cfg.rows_fraction)),
        ctx.ids, rows_until, cfg.prior_rate)))
    warmup = ctx.facts["tree_warmup"] = _empty_warmup_table()
    _guarded(notes, "tree", lambda: run_tree(ctx, rows, until, warmup, notes))
    _guarded(notes, "prefix", lambda: ctx.harness.maybe_fail("prefix") or add_measure(ctx, measure(
        ctx.torch, ctx.scorer("prefix"), "prefix", f"{cfg.prefix_fraction:.0%} seeded sample",
        ctx.selection(ctx.sample(cfg.prefix_fraction)), ctx.ids, until, _rate(ctx, "rows"))))
    _guarded(notes, "tree warm-up again", lambda: notes.extend(filter(None, [tree_rewarm(ctx, until)])))
    ctx.best = min(ctx.suite_seconds, key=ctx.suite_seconds.get) if ctx.suite_seconds else None
    notes += bound_notes(ctx) + [f"fastest packing on the suite: {ctx.best} "
                                 f"({ctx.suite_seconds.get(ctx.best, float('nan')):.1f} s)"]
    return {"notes": notes, "best": ctx.best, "suite_seconds": ctx.suite_seconds, "tree_variant": ctx.tree_variant,
            "measures": {name: m.public() for name, m in ctx.measures.items()},
            "tables": [{"columns": SUITE_COLUMNS, "rows": [suite_row(ctx, m) for m in ctx.measures.values()]},
                       warmup]}


def _guarded(notes: List[str], what: str, step: Callable[[], Any]) -> None:
    """Run one step of a stage; its exception becomes a note (and a traceback in the log), the next step runs."""
    try:
        step()
    except Exception as error:
        import traceback
        print(f"[suite] {what} FAILED:\n{traceback.format_exc()}", flush=True)
        notes.append(f"{what} FAILED: {type(error).__name__}: {str(error)[:500]}")


def run_tree(ctx: Context, rows: Any, until: float, table: Dict[str, Any], notes: List[str]) -> None:
    """Warm the tree variants up, run the chosen one on the whole suite; a variant that breaks in the run is
    recorded and the next variant is warmed up and run in the time left."""
    cfg, tried = ctx.config, set()
    while True:
        tree_warmup(ctx, rows, min(until, time.perf_counter() + cfg.sub_budgets["tree-warmup"]),
                    until - cfg.sub_budgets["rows"], table, tried)
        if ctx.tree_scorer is None:
            notes.append("tree packing did not run on the suite: no attention variant was left that ran and agreed "
                         "with rows in the time (see the warm-up table)")
            return
        try:
            ctx.harness.maybe_fail("tree-run")
            tree = measure(ctx.torch, ctx.tree_scorer, "tree", f"whole suite ({ctx.tree_variant})", ctx.selection(),
                           ctx.ids, until - cfg.sub_budgets["prefix-reserve"], _rate(ctx, "rows"))
        except Exception as error:
            import traceback
            print(f"[suite] tree ({ctx.tree_variant}) failed on the suite:\n{traceback.format_exc()}", flush=True)
            table["rows"].append([ctx.tree_variant, "failed in the suite run", "", "", "", "",
                                  f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"])
            tried.add(ctx.tree_variant)
            ctx.tree_scorer = ctx.tree_variant = None
            continue
        if tree.groups_done < tree.groups:
            tree.scope += f", stopped after {tree.groups_done} of {tree.groups} datasets"
        add_measure(ctx, tree)
        notes.append(f"dynamo after the tree run: {_dynamo_stats()}")
        return


def add_measure(ctx: Context, m: Measure, stage: str = "suite") -> None:
    """Record a packing's measurement and its suite time (extrapolated by tokens given when it covered less);
    what the stage has so far is written at once."""
    ctx.measures[m.name] = m
    if m.given:
        ctx.suite_seconds[m.name] = m.seconds * ctx.total_given / m.given
    tables = [{"columns": SUITE_COLUMNS, "rows": [suite_row(ctx, x) for x in ctx.measures.values()]}]
    ctx.harness.progress(stage, {"tables": tables + ([ctx.facts["tree_warmup"]] if "tree_warmup" in ctx.facts else [])})
    print(f"[suite] {m.name}: {m.prompts} prompts, {m.given} tokens given, {m.computed} run, {m.seconds:.2f} s "
          f"-> suite {ctx.suite_seconds.get(m.name, float('nan')):.1f} s", flush=True)


def _rate(ctx: Context, name: str) -> Optional[float]:
    m = ctx.measures.get(name)
    return m.given / m.seconds if m is not None and m.seconds > 0 else ctx.config.prior_rate


def bound_notes(ctx: Context) -> List[str]:
    reads = len(ctx.ids)
    at_400 = ctx.bound(ctx.total_given, reads, README_PEAK)
    at_measured = ctx.bound(ctx.total_given, reads, ctx.peak_measured)
    measured = f"{at_measured:.3g} s at the measured {ctx.peak_measured / 1e12:.3g} TFLOP/s" if at_measured else \
        "no measured rate"
    return [f"no-sharing FLOP bound of the suite ({len(ctx.ids):,} prompts, {ctx.total_given:,} tokens given, one "
            f"read each): {at_400:.3g} s at 400 TFLOP/s (the README's), {measured}",
            "a sampled or stopped run's suite seconds are extrapolated by tokens given (measured s x suite tokens / "
            "its tokens); 'x bound' divides the suite seconds by the bound"]


def suite_row(ctx: Context, m: Measure, total_given: Optional[int] = None, reads: Optional[int] = None,
              shape: Any = None) -> List[Any]:
    total_given = total_given or ctx.total_given
    reads = reads or len(ctx.ids)
    shape = shape or ctx.shape
    suite_s = m.seconds * total_given / m.given if m.given else None
    extrapolated = m.given < total_given
    ran = shape.flops(m.computed + m.padding, m.logit_positions)
    at_400 = shape.flops(total_given, reads) / README_PEAK
    at_measured = shape.flops(total_given, reads) / ctx.peak_measured if ctx.peak_measured else None
    return [m.name, m.scope, m.prompts, f"{m.seconds:.2f}",
            "" if suite_s is None else f"{'~' if extrapolated else ''}{suite_s:.1f}", m.given, m.computed,
            f"{m.computed / m.given:.3f}" if m.given else "", f"{ran / m.seconds / 1e12:.3g}" if m.seconds else "",
            f"{suite_s / at_400:.2f}" if suite_s else "", f"{suite_s / at_measured:.2f}" if suite_s and at_measured else "",
            m.forward_calls, m.peak_mib if m.peak_mib is not None else "", m.oom_retries, f"{m.plan_s:.1f}"]


def _dynamo_stats() -> str:
    try:
        from torch._dynamo.utils import counters
        return ", ".join(f"{key} {dict(value)}" for key, value in counters.items() if key in ("stats", "recompiles"))
    except Exception as error:  # diagnostics only
        return f"unavailable ({error})"


def _variants(ctx: Context) -> List[str]:
    choice = ctx.config.tree_attention
    if choice == "dense" or (choice == "auto" and not ctx.cuda):
        return ["dense"]
    return list(TREE_VARIANTS)


def warmup_prompts(ctx: Context) -> List[List[int]]:
    """The first prompts of the first two datasets (two pack lengths at least: the compile for varying shapes)."""
    size = ctx.config.warmup_prompts
    return [members[:size // (1 + 2 * g)] for g, members in enumerate(ctx.members[:2])]


def tree_rewarm(ctx: Context, until: float) -> Optional[str]:
    """The tree warm-up again after ``torch._dynamo.reset()``: what a second process pays once the compilers'
    on-disk caches hold the kernels (the first warm-up is a cold machine's cost)."""
    if ctx.tree_variant not in ("flex", "flex-padded") or time.perf_counter() + 40 > until:
        return None
    use_variant(ctx.torch, ctx.tree_variant)  # resets dynamo: every compiled frame is traced again
    scorer, began = ctx.scorer("tree"), time.perf_counter()
    for part, group in zip(warmup_prompts(ctx), ctx.groups):
        score_ids(scorer, [ctx.ids[i] for i in part], group.labels)
    ctx.synchronize()
    ctx.facts["tree_rewarm_s"] = seconds = time.perf_counter() - began
    return (f"tree warm-up again after torch._dynamo.reset() (on-disk compile caches warm, as for a second process "
            f"on this machine): {seconds:.1f} s, against {ctx.facts.get('tree_warmup_s', float('nan')):.1f} s cold")


def _empty_warmup_table() -> Dict[str, Any]:
    return {"columns": ["tree variant", "status", "warm-up s", "prompts", "argmax % vs rows", "max |dp| vs rows",
                        "note"], "rows": []}


def tree_warmup(ctx: Context, rows: Any, until: float, stage_until: float, table: Dict[str, Any],
                tried: set) -> Dict[str, Any]:
    """Try the tree variants not in ``tried`` on a few datasets' first prompts (compiles included) until one runs
    and agrees with rows; each try is a row of ``table``, each variant tried is added to ``tried``.

    The FlexAttention variants must start before ``until`` (the warm-up budget); the dense mask, which
    compiles nothing, before ``stage_until`` (the stage's deadline less the time the run needs)."""
    chosen = warmup_prompts(ctx)
    reference = [score_ids(rows, [ctx.ids[i] for i in part], group.labels) for part, group in zip(chosen, ctx.groups)]
    for variant in [v for v in _variants(ctx) if v not in tried]:
        tried.add(variant)
        needs = 5.0 if variant == "dense" else ctx.config.sub_budgets["tree-warmup-variant"]  # dense compiles nothing
        if time.perf_counter() + needs > (stage_until if variant == "dense" else until):
            table["rows"].append([variant, "skipped", "", "", "", "", "no time left in the warm-up budget"])
            continue
        began, scorer = time.perf_counter(), None
        try:
            use_variant(ctx.torch, variant)
            ctx.tree_variant = variant
            scorer = ctx.scorer("tree")
            got = [score_ids(scorer, [ctx.ids[i] for i in part], group.labels) for part, group in zip(chosen, ctx.groups)]
            ctx.synchronize()
        except Exception as error:
            import traceback
            print(f"[suite] tree variant {variant} failed:\n{traceback.format_exc()}", flush=True)
            table["rows"].append([variant, "error", f"{time.perf_counter() - began:.1f}", "", "", "",
                                  f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"])
            continue
        seconds = time.perf_counter() - began
        flat, ref = [r for part in got for r in part], [r for part in reference for r in part]
        agree, diff = kernel_table.agreement(flat, ref)
        problem = "; ".join(scorer.switched_off) or (f"argmax agrees on {agree:.1f} % < {MIN_WARMUP_AGREEMENT} %"
                                                     if agree < MIN_WARMUP_AGREEMENT else "")
        table["rows"].append([variant, "failed" if problem else "chosen", f"{seconds:.1f}", len(flat), f"{agree:.2f}",
                              f"{diff:.2e}", problem or f"padding tokens so far {COUNTERS['padding']}"])
        if not problem:
            ctx.tree_scorer = scorer
            ctx.facts["tree_warmup_s"] = seconds
            return table
    ctx.tree_variant = None
    use_variant(ctx.torch, "dense")  # the engine's own pack forward again, dynamic shapes back on
    return table


# ------------------------------------------------------------------ 2. agreement with float32
def stage_agreement(ctx: Context, until: float) -> Dict[str, Any]:
    torch, cfg = ctx.torch, ctx.config
    sample = set(ctx.order[:cfg.agreement_prompts])
    reference = copy.deepcopy(ctx.model).to(torch.float32)
    from StaICC.backends.causal_lm import CausalLMScorer
    scorer = CausalLMScorer(reference, ctx.tokenizer, dtype=torch.float32, packing="rows")
    fp32 = measure(torch, scorer, "float32 rows", f"{len(sample)} seeded prompts", ctx.selection(sample), ctx.ids,
                   until)
    del scorer, reference
    gc.collect()
    if ctx.cuda:
        torch.cuda.empty_cache()
    rows, summary = [], {}
    pairs = [(name, "float32 rows", m, fp32) for name, m in ctx.measures.items()]
    pairs += [(name, "rows (bf16)" if ctx.cuda else "rows", ctx.measures[name], ctx.measures["rows"])
              for name in ("prefix", "tree") if name in ctx.measures and "rows" in ctx.measures]
    for name, against, m, reference_measure in pairs:
        common = sorted(set(m.probs) & set(reference_measure.probs))
        if not common:
            continue
        agree, diff = kernel_table.agreement([m.probs[i] for i in common], [reference_measure.probs[i] for i in common])
        rows.append([name, against, len(common), f"{agree:.2f}", f"{diff:.2e}"])
        summary[f"{name} vs {against}"] = {"prompts": len(common), "argmax_percent": agree, "max_abs_dp": diff}
    ctx.facts["agreement"] = summary
    notes = [f"float32 reference: one row per prompt, {fp32.prompts} prompts in {fp32.seconds:.1f} s "
             f"(TF32 matmul {'on' if ctx.cuda and torch.backends.cuda.matmul.allow_tf32 else 'off'}); the target is "
             f">= 99 % argmax agreement"]
    return {"notes": notes, "agreement": summary,
            "tables": [{"columns": ["packing", "against", "prompts", "argmax agreement %", "max |dp|"], "rows": rows}]}


def summarize(ctx: Context) -> None:
    """The summary at the top of the table: the figures the README's GPU table takes."""
    from gpu_stages_more import readme_rows
    ctx.harness.record["summary"] = readme_rows(ctx)
