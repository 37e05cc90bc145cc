"""The later stages of ``gpu_suite.py``: the route row, the suite runner, the 8B-wide stack, prefix on the whole suite.

Same contract as :mod:`gpu_stages`: ``stage(context, until) -> result``.
"""
import gc
import time
from typing import Any, Dict, List, Optional, Tuple

import kernel_table
from gpu_harness import StageSkipped
from gpu_measure import Measure, apply_variant, measure, score_ids, use_variant
from gpu_stages import README_PEAK, SUITE_COLUMNS, Context, add_measure, suite_row, warmup_prompts


def _backend(ctx: Context, model_id: str, packing: str, requests_per_call: Optional[int] = None) -> Any:
    """An ``hf`` backend over the in-memory model (named, so no weights are hashed), the tree variant applied."""
    from StaICC.backends.hf import HFBackend
    backend = HFBackend(ctx.model, ctx.tokenizer, model_id=model_id, packing=packing,
                        requests_per_call=requests_per_call)
    if packing == "tree":
        apply_variant(backend.scorer, ctx.tree_variant)
    return backend


# ------------------------------------------------------------------ 3. the route row
def _route_suite(ctx: Context) -> Dict[str, Any]:
    from StaICC.metrics import with_own_distribution_metrics
    from StaICC.subbenchmarks.suite import build_suite
    suite = build_suite("Normal", list(ctx.config.route_datasets), 4)
    for bench in suite.values():
        if ctx.config.route_limit:
            bench.limit_test_items(ctx.config.route_limit)
        for experimentor in bench:
            experimentor.metrics = with_own_distribution_metrics(experimentor.metrics)
    return suite


def _route_plan(ctx: Context) -> List[Tuple[str, str, int]]:
    best = ctx.best or "rows"
    large, small = ctx.config.route_calls
    plan = [("baseline", best, large), ("repeat", best, large), ("calls", best, small)]
    for other in ("tree", "prefix", "rows"):
        if other != best and (other != "tree" or ctx.tree_variant is not None):
            plan.append(("packing", other, large))
    return plan


def stage_route(ctx: Context, until: float) -> Dict[str, Any]:
    from route_workload import METRIC_NAMES, differences, numbers_of

    from StaICC.subbenchmarks.suite import run_suite
    short = {"accuracy": "acc.", "averaged_truelabel_likelihood": "likelihood", "macro_F1": "macro-F1",
             "expected_calibration_error_1": "ECE", "own_likelihood_nonstandard": "own lik.",
             "own_ece_nonstandard": "own ECE"}
    rows, baseline, seconds_per_run, numbers_of_runs = [], None, 0.0, {}
    for kind, packing, calls in _route_plan(ctx):
        if seconds_per_run and time.perf_counter() + 1.5 * seconds_per_run > until:
            rows.append([f"{packing}, {calls}/call ({kind})", "skipped: no time"] + [""] * (len(METRIC_NAMES) + 1))
            continue
        backend = _backend(ctx, "gpu-suite-route", packing, calls)
        began = time.perf_counter()
        numbers = numbers_of(run_suite(backend, suite=_route_suite(ctx), progress=False))
        ctx.synchronize()
        seconds = time.perf_counter() - began
        seconds_per_run = max(seconds_per_run, seconds)
        name = f"{packing}, {calls}/call" + (" (again)" if kind == "repeat" else "")
        numbers_of_runs[name] = numbers
        if baseline is None:
            baseline = numbers
            rows.append([name + " = baseline", f"{seconds:.1f}", "baseline"] + [""] * len(METRIC_NAMES))
            continue
        worst = differences(baseline, numbers)
        rows.append([name, f"{seconds:.1f}", "yes" if numbers == baseline else "no"]
                    + ["0" if worst[m] == 0 else f"{worst[m]:.1e}" for m in METRIC_NAMES])
    averaged = {path: value for path, value in (baseline or {}).items() if "Averaged" in path}
    ctx.facts["route"] = rows
    return {"numbers": numbers_of_runs, "notes": [
        f"Normal on {', '.join(ctx.config.route_datasets)}"
        + (f", {ctx.config.route_limit} test items" if ctx.config.route_limit else ", every test item")
        + f", {ctx.model_name}, {ctx.model.dtype}, the hf backend; each cell is the largest absolute difference of "
          "that metric's numbers (per dataset and averaged) from the baseline",
        "baseline averaged results: " + ", ".join(f"{p.split('/')[-1]} {v:.4f}" for p, v in averaged.items())],
        "tables": [{"columns": ["route", "s", "bit-equal"] + [short[m] for m in METRIC_NAMES], "rows": rows}]}


# ------------------------------------------------------------------ 4. the suite runner
def stage_runner(ctx: Context, until: float) -> Dict[str, Any]:
    from StaICC.engine.selection import QuerySubset
    from StaICC.subbenchmarks.suite import run_suite
    cfg = ctx.config
    if ctx.best is None:
        raise StageSkipped("no packing was measured on the suite")
    estimate = ctx.suite_seconds[ctx.best] * 1.25 + cfg.sub_budgets["runner-overhead"]
    if time.perf_counter() + estimate > until:
        raise StageSkipped(f"the runner would need about {estimate:.0f} s ({ctx.best}'s suite time x 1.25 + "
                           f"{cfg.sub_budgets['runner-overhead']:.0f} s), {until - time.perf_counter():.0f} s left")
    backend = _backend(ctx, "gpu-suite-runner", ctx.best)
    if ctx.cuda:
        ctx.torch.cuda.reset_peak_memory_stats()
    options = {"test_items": QuerySubset.first(cfg.runner_limit)} if cfg.runner_limit else {}  # smoke: --limit
    began = time.perf_counter()
    result = run_suite(backend, datasets=list(cfg.datasets), k=4, progress=False, **options)
    ctx.synchronize()
    seconds = time.perf_counter() - began
    stats = backend.scorer.stats
    metadata = dict(result.metadata)
    m = Measure(f"suite runner ({ctx.best})", f"run_suite, hf backend, {backend.requests_per_call}/call", groups=1,
                groups_done=1, prompts=metadata.get("asked", 0), seconds=seconds, given=stats.tokens_requested,
                computed=stats.tokens_computed, reads=stats.reads, logit_positions=stats.logit_positions,
                forward_calls=stats.forward_calls,
                peak_mib=round(ctx.torch.cuda.max_memory_allocated() / 2 ** 20) if ctx.cuda else None)
    ctx.facts["runner"] = {"seconds": seconds, "packing": ctx.best, "given": m.given, "reads": m.reads,
                           "prompts": metadata.get("prompts"), "asked": metadata.get("asked")}
    return {"metadata": {k: v for k, v in metadata.items() if k not in ("model", "fingerprint")}, "notes": [
        f"run_suite(hf backend, packing={ctx.best}) end to end: planning, requests, tokenization, scoring, metrics "
        f"(no cache): {seconds:.1f} s for {metadata.get('prompts')} prompts, {metadata.get('asked')} asked",
        f"switched off: {backend.scorer.switched_off or 'nothing'}"],
        "tables": [{"columns": SUITE_COLUMNS,
                    "rows": [suite_row(ctx, m, total_given=m.given, reads=m.reads)]}]}


# ------------------------------------------------------------------ 5. the 8B-wide stack
def stage_stack(ctx: Context, until: float) -> Dict[str, Any]:
    from model_presets import random_llama
    cfg, torch = ctx.config, ctx.torch
    packing = ctx.best or "rows"
    group = next(g for g, found in enumerate(ctx.groups) if found.dataset == cfg.stack_dataset)
    members, labels = ctx.members[group], ctx.groups[group].labels
    if packing == "tree":
        use_variant(torch, ctx.tree_variant)  # a fresh compile for the new head size
    runs, rows, notes = [], [], []
    for layers in cfg.stack_layers:
        shape = dict(cfg.stack_shape, num_hidden_layers=layers)
        shape.setdefault("vocab_size", len(ctx.tokenizer))
        estimate = _stack_estimate(ctx, packing, shape, sum(len(ctx.ids[i]) for i in members), first=not runs)
        if time.perf_counter() + estimate > until:
            notes.append(f"{layers} layers: skipped, it would need about {estimate:.0f} s, "
                         f"{until - time.perf_counter():.0f} s left")
            continue
        model = random_llama(shape, cfg.device, ctx.model.dtype).eval()
        scorer = ctx.scorer(packing, model)
        began = time.perf_counter()
        score_ids(scorer, [ctx.ids[i] for i in members[:256]], labels)
        ctx.synchronize()
        notes.append(f"{layers} layers: warm-up ({len(members[:256])} prompts{', compile' if packing == 'tree' else ''}) "
                     f"{time.perf_counter() - began:.1f} s")
        m = measure(torch, scorer, f"{packing}, {layers} layers", f"{cfg.stack_dataset}'s suite prompts",
                    [(members, labels)], ctx.ids, until)
        if m.groups_done:
            runs.append((layers, m, kernel_table.shape_of(model)))
            rows.append(suite_row(ctx, m, total_given=m.given, reads=m.reads, shape=runs[-1][2]))
        del scorer, model
        gc.collect()
        if ctx.cuda:
            torch.cuda.empty_cache()
    result = {"notes": notes, "tables": [{"columns": SUITE_COLUMNS, "rows": rows}]}
    if len(runs) == 2:
        result["extrapolation"] = _extrapolated(ctx, runs, len(members))
        result["notes"] += result["extrapolation"]["notes"]
    return result


def _stack_estimate(ctx: Context, packing: str, shape: Dict[str, Any], given: int, first: bool) -> float:
    """Seconds one layer count will take: the 1B-shaped run's time per token given, scaled by the parameters outside
    the embedding and head, twice over (warm-up and margin), plus the FlexAttention compile once (measured in the
    suite's tree warm-up)."""
    hidden, layers, inner = shape["hidden_size"], shape["num_hidden_layers"], shape["intermediate_size"]
    kv = hidden // shape["num_attention_heads"] * shape["num_key_value_heads"]
    per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * inner
    measured = ctx.measures.get(packing)
    per_token = measured.seconds / measured.given if measured is not None and measured.given else 1e-5
    seconds = 2 * given * per_token * per_layer * layers / max(1, ctx.shape.nonembedding) + 10
    compiles = first and packing == "tree" and ctx.tree_variant != "dense"
    return seconds + (ctx.facts.get("tree_warmup_s", 60.0) if compiles else 0.0)


def _extrapolated(ctx: Context, runs: List[Tuple[int, Measure, Any]], prompts: int) -> Dict[str, Any]:
    """The time at the full layer count from the line through the two measured layer counts (the embedding, the
    head and the host work are the intercept, not scaled), cross-checked by the FLOP ratio."""
    full = ctx.config.stack_full_layers
    (l1, m1, s1), (l2, m2, s2) = runs
    slope = (m2.seconds - m1.seconds) / (l2 - l1)
    at_full = m1.seconds + slope * (full - l1)
    per_layer = (s2.nonembedding - s1.nonembedding) / (l2 - l1)
    shape = kernel_table.Shape(int(s1.nonembedding + per_layer * (full - l1)), s1.hidden, s1.vocab)
    by_flops = m2.seconds * shape.flops(m2.computed, m2.logit_positions) / s2.flops(m2.computed, m2.logit_positions)
    bound = shape.flops(m2.given, m2.reads) / README_PEAK
    separated = slope > 0
    ctx.facts["stack"] = {"layers": full, "seconds": at_full if separated else None, "by_flops": by_flops,
                          "bound": bound, "prompts": prompts, "given": m2.given, "nonembedding": shape.nonembedding}
    line = (f"{full} layers, EXTRAPOLATED: {m1.seconds:.2f} s at {l1} layers and {m2.seconds:.2f} s at {l2} layers "
            f"give {slope:.3f} s per layer and {m1.seconds - slope * l1:.2f} s for the rest (embedding, head, host "
            f"work: not scaled), so {at_full:.1f} s for {prompts:,} prompts ({m2.given:,} tokens given)")
    if separated and m1.seconds - slope * l1 < 0:
        line += " (the rest comes out negative: the two times are noisy; prefer the FLOP cross-check)"
    if not separated:
        line = (f"{full} layers: NOT extrapolated by the line: {m1.seconds:.2f} s at {l1} layers and {m2.seconds:.2f} s "
                f"at {l2} layers do not separate a per-layer cost from the rest (noise); use the FLOP cross-check")
    return {"seconds": at_full if separated else None, "by_flops": by_flops, "bound_400": bound, "notes": [
        line,
        f"cross-check by FLOPs ({l2} layers' time x the {full}-layer FLOPs / the {l2}-layer FLOPs): {by_flops:.1f} s",
        f"{full}-layer no-sharing bound ({shape.nonembedding / 1e9:.2f} B non-embedding parameters, 400 TFLOP/s): "
        f"{bound:.1f} s, so {(at_full if separated else by_flops) / bound:.2f}x the bound"]}


# ------------------------------------------------------------------ 6. prefix on the whole suite
def stage_prefix_full(ctx: Context, until: float) -> Dict[str, Any]:
    sampled = ctx.measures.get("prefix")
    if sampled is not None and sampled.given >= ctx.total_given:
        raise StageSkipped("prefix already ran on the whole suite")
    rate = sampled.given / sampled.seconds if sampled is not None and sampled.seconds else ctx.config.prior_rate
    m = measure(ctx.torch, ctx.scorer("prefix"), "prefix", "whole suite", ctx.selection(), ctx.ids, until, rate)
    if not m.groups_done:
        raise StageSkipped("not even one dataset fits in the time left")
    if m.groups_done < m.groups:
        m.scope += f", stopped after {m.groups_done} of {m.groups} datasets"
    add_measure(ctx, m, "prefix-full")
    return {"measure": m.public(), "tables": [{"columns": SUITE_COLUMNS, "rows": [suite_row(ctx, m)]}]}


# ------------------------------------------------------------------ the summary
def readme_rows(ctx: Context) -> Dict[str, Any]:
    """The README's GPU table, filled from this run (figures marked ~ are extrapolated)."""
    facts, rows = ctx.facts, []
    device = facts.get("device", {})
    notes = [f"{device.get('device', '?')}, torch {device.get('torch', '?')}, transformers "
             f"{device.get('transformers', '?')}; measured product rate {device.get('measured_product_tflops')} "
             f"TFLOP/s; {ctx.harness.record.get('header', {}).get('model', '')}"]
    if ctx.suite_seconds and ctx.shape is not None:
        bound = ctx.bound(ctx.total_given, len(ctx.ids), README_PEAK)
        for name, seconds in sorted(ctx.suite_seconds.items(), key=lambda item: item[1]):
            m = ctx.measures[name]
            mark = "~" if m.given < ctx.total_given else ""
            rows.append([f"the suite's {len(ctx.ids):,} distinct prompts, packing={name} ({m.scope})",
                         f"{mark}{seconds:.1f} s = {mark}{seconds / bound:.2f}x the no-sharing bound ({bound:.1f} s); "
                         f"tokens run / given {m.computed / m.given:.3f}"])
    if "tree_warmup_s" in facts:
        again = f"; {facts['tree_rewarm_s']:.1f} s again with the compile caches warm" if "tree_rewarm_s" in facts else ""
        rows.append([f"packing=tree's first use in a process ({ctx.tree_variant}: probe, compile, "
                     f"{sum(len(p) for p in warmup_prompts(ctx))} prompts), not in the times above",
                     f"{facts['tree_warmup_s']:.1f} s in this run's first warm-up (a fresh machine's compile "
                     f"caches are empty){again}"])
    if "runner" in facts:
        r = facts["runner"]
        rows.append([f"run_suite through the hf backend, packing={r['packing']}", f"{r['seconds']:.1f} s"])
    for key, value in facts.get("agreement", {}).items():
        rows.append([f"argmax agreement, {key}", f"{value['argmax_percent']:.2f} % of {value['prompts']}, "
                                                 f"max |dp| {value['max_abs_dp']:.2e}"])
    if "stack" in facts:
        s = facts["stack"]
        line = f"~{s['seconds']:.1f} s by layer count, " if s["seconds"] is not None else "no line fit; "
        rows.append([f"Llama-3.1-8B's width, {s['layers']} layers EXTRAPOLATED, {s['prompts']:,} prompts of one "
                     f"dataset", f"{line}~{s['by_flops']:.1f} s by FLOPs; no-sharing bound {s['bound']:.1f} s"])
    return {"notes": notes, "tables": [{"columns": ["measure", "figure"], "rows": rows}]}
