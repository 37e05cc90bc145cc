#!/usr/bin/env python3
"""What ``--methods`` costs beside the plain run, and whether it equals the hand-wired route on this device.

    python benchmarks/bench_methods.py [--preset tiny|small|llama-3.2-1b] [--datasets TREC rotten_tomatoes | all]
                                       [--limit N] [--skip-equality] [--skip-cost] [--per-method] [--reference]
                                       [--only NAME ...] [--repeats N] [--vanilla-once] [--whole-command]

A random-weight Llama of the preset's shape (on CUDA when there is one; throughput depends on
the shape, not on the values) with a BPE tokenizer trained on the datasets' demonstrations.

1. Equality: every built-in method through ``run_methods`` against the hand-wired route
   (``calibration.train(...)`` with the scorer's feedforwards, then ``auto_run`` with the calibrated
   inference), each prompt computed alone (``batch_size=1,packing=rows``) so that batching does
   not enter; 5 test items and 16 calibration prompts per dataset.  Prints, per method, whether
   every metric of every dataset is equal to the last bit.
2. Cost, with the backend's default batching, Normal on the datasets: the plain run, then three
   sets of methods, each a fresh backend over the same model in this process (warmed up first):
   requests asked, distinct, wall seconds, each as a ratio to the plain run, and the peak GPU
   memory (CUDA) or the process's peak RSS.
3. ``--per-method``: each built-in method beside vanilla (``[vanilla, NAME]``) against vanilla alone, on
   the same model, the two alternated in each round: requests asked, wall and CPU seconds as ratios
   (vanilla's own run counted in both).  ``--vanilla-once``: each round runs vanilla once, then every pair
   (for a model whose inference is long: vanilla's figure is then shared by the methods of a round; each
   run's seconds are printed as it ends).
   ``--datasets all``: every dataset of Normal; ``--skip-cost``: leave 2. out.
   ``--reference``: the same with the built-in lexical model on every dataset of Normal (its full test
   sets), no torch needed; there inference is nearly free, so the ratio is what a method adds in
   planning, fitting, applying and summarising.
4. ``--reference --whole-command``: a second, whole-command view of the methods that need no inference (or
   ``--only``): ``staicc run --model reference --benchmarks Normal --methods vanilla`` against ``--methods
   vanilla,NAME``, each a fresh process (imports, the comparison tables and their bootstrap included),
   alternated, best of ``--repeats``: wall and CPU seconds.  3. stays the primary figure.

Never imported by the package.
"""
import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = {
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 128, "tie_word_embeddings": True},
    "small": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 4,
              "intermediate_size": 1536, "tie_word_embeddings": True},
}
#: the built-in methods that need no inference of their own (the cost target: <= 1.05x vanilla's run)
NO_INFERENCE = ("batch", "ucpa", "sucpa", "temperature", "platt", "supervised", "linc")
SETS = {
    "vanilla": ["vanilla"],
    "+ contextual, domain, batch": ["vanilla", "contextual", "domain", "batch"],
    "+ knn, knn_centroid, hidden": ["vanilla", "knn", "knn_centroid", "hidden"],
    "all eight": ["vanilla", "noisy_channel", "contextual", "domain", "batch", "knn", "knn_centroid", "hidden"],
}


def model_and_tokenizer(preset: str, datasets):
    import torch

    from StaICC import Normal
    from StaICC.backends.tiny_models import tiny_tokenizer
    from model_presets import PRESETS, random_llama
    bench = Normal(k=0, datasets=list(datasets))
    texts = [text for e in bench for i in range(min(2000, len(e.demonstration_set())))
             for text in e.demonstration_set()[i][0]]
    tokenizer = tiny_tokenizer(texts, vocab_size=4096 if preset in SHAPES else 32000)
    shape = dict(SHAPES[preset], vocab_size=len(tokenizer)) if preset in SHAPES else dict(PRESETS[preset])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    return random_llama(shape, device, dtype).eval(), tokenizer


def equality(model, tokenizer, datasets) -> None:
    import StaICC.methods.calibration as c
    from StaICC import Normal
    from StaICC.backends.causal_lm import CausalLMScorer
    from StaICC.backends.hf import HFBackend
    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.builtin import built_in
    from StaICC.methods.run import run_methods
    names = list(SETS["all eight"])
    methods = [built_in(n) if n in ("vanilla", "noisy_channel", "batch") else built_in(n, calibration_number=16)
               for n in names]
    subset = QuerySubset.first(5)
    backend = HFBackend(model, tokenizer, batch_size=1, packing="rows", model_id="bench")
    result = run_methods(backend, methods, "Normal", list(datasets), test_items=subset)
    score = CausalLMScorer(model, tokenizer, rows_per_forward=1, packing="rows")
    for name in names:
        bench = Normal(datasets=list(datasets), test_items=subset, noisy_channel=name == "noisy_channel")
        equal = True
        for i, dataset in enumerate(bench.dataset_names()):
            e, labels = bench[i], bench[i].get_label_space()
            f = score
            if name == "batch":
                f = lambda prompt, label_space: c.batch_calibration(score(prompt=prompt, label_space=label_space))  # noqa: E731
            elif name not in ("vanilla", "noisy_channel"):
                cal, ff = {"contextual": (c.contextual_calibration(labels), score),
                           "domain": (c.domain_calibration(labels), score),
                           "hidden": (c.hidden_calibration(labels), score.feedforward_with_hidden_state),
                           "knn": (c.knn_prompting(labels), score.feedforward_with_full_vocab),
                           "knn_centroid": (c.knn_prompt_centroid(labels), score.feedforward_with_full_vocab)}[name]
                cal.train(e.prompt_former.write_prompt_from_dataline, ff, e.calibration_set(), calibration_number=16,
                          k=e.get_k())
                f = score.calibrated(cal.inference)
            summary, _ = e.auto_run(forward_inference=f, batched_inference=True)
            equal = equal and summary == result[name]["Normal"]["Divided results"][dataset]
        print(f"  {name:13s} equal to the hand-wired route, every metric of {len(datasets)} datasets: {equal}")


def _peak(torch) -> str:
    if torch.cuda.is_available():
        return f"{torch.cuda.max_memory_allocated() / 2**20:8.0f} MiB GPU"
    return f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MiB RSS"


def cost(model, tokenizer, datasets, limit) -> None:
    import torch

    from StaICC.backends.hf import HFBackend
    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.run import run_methods
    subset = QuerySubset.first(limit) if limit else None
    run_methods(HFBackend(model, tokenizer, model_id="bench"), ["vanilla"], "Normal", list(datasets),
                test_items=QuerySubset.first(5))  # warm-up: kernels, allocator
    base = None
    for label, names in SETS.items():
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        result = run_methods(HFBackend(model, tokenizer, model_id="bench"), names, "Normal", list(datasets),
                             test_items=subset)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        asked, distinct = result.metadata["asked"], result.metadata["distinct_prompts"]
        base = base or (asked, seconds)
        print(f"  {label:28s} asked {asked:6d} ({asked / base[0]:4.2f}x)  distinct {distinct:6d}  "
              f"{seconds:7.2f} s ({seconds / base[1]:4.2f}x)  peak {_peak(torch)}")


def _best_of(runs, keys, repeats: int, verbose: bool = False):
    """``{key: (asked, (wall, CPU))}``: each key's best wall and CPU seconds over ``repeats`` rounds, each round
    running the keys in order (``runs(key)`` gives one run's requests asked and seconds); ``verbose``: each run's
    figures printed as it ends."""
    best = {}
    for round_ in range(repeats):
        for key in keys:
            asked, seconds = runs(key)
            if verbose:
                print(f"    round {round_ + 1} {key:12s} {seconds[0]:8.2f} s wall {seconds[1]:8.2f} s CPU", flush=True)
            old = best.get(key, (asked, seconds))[1]
            best[key] = (asked, (min(old[0], seconds[0]), min(old[1], seconds[1])))
    return best


def per_method(make_backend, datasets, limit, note: str, only=None, repeats: int = 2,
               vanilla_once: bool = False) -> None:
    """Each built-in method the backend serves (or those in ``only``) beside vanilla, against vanilla alone: wall
    seconds, and this process's CPU seconds (which other jobs on a shared machine disturb less; the model runs on
    one thread on CPU).  Each of the ``repeats`` rounds runs vanilla alone and then the pair, so that both see the
    same load; each figure is the best of its runs.  ``vanilla_once``: each round runs vanilla once and then every
    method's pair, each compared with vanilla's best of all rounds."""
    from StaICC.engine.selection import QuerySubset
    from StaICC.methods.builtin import BUILT_IN, table_order
    from StaICC.methods.files import resolve_methods
    from StaICC.methods.run import check_backend, run_methods
    subset = QuerySubset.first(limit) if limit else None

    def once(key):
        started, cpu = time.perf_counter(), time.process_time()
        names = ["vanilla"] if key == "vanilla" else ["vanilla", key]
        result = run_methods(make_backend(), names, "Normal", datasets, test_items=subset)
        return result.metadata["asked"], (time.perf_counter() - started, time.process_time() - cpu)

    names = []
    for name in table_order([n for n in BUILT_IN if n != "vanilla" and (not only or n in only)]):
        try:
            check_backend(make_backend(), resolve_methods([name])[1], ())
            names.append(name)
        except ValueError:
            print(f"  {name:14s} not served by this backend")
    run_methods(make_backend(), ["vanilla"], "Normal", datasets[:1], test_items=QuerySubset.first(5))  # warm-up
    if vanilla_once:
        best = _best_of(once, ["vanilla"] + names, repeats, verbose=True)
        pairs = {name: (best["vanilla"], best[name]) for name in names}
    else:
        best = _best_of(once, ["vanilla"], repeats)
        pairs = {name: tuple(_best_of(once, ["vanilla", name], repeats).values()) for name in names}
    base_asked, (base_seconds, base_cpu) = best["vanilla"]
    print(f"3. each method beside vanilla, against vanilla alone measured in the same rounds ({note}; vanilla: "
          f"{base_asked} requests, {base_seconds:.2f} s wall, {base_cpu:.2f} s CPU; best of {repeats}"
          f"{', vanilla once a round' if vanilla_once else ''}):")
    for name, ((base_asked, (base_seconds, base_cpu)), (asked, (seconds, cpu))) in pairs.items():
        print(f"  {name:14s} asked {asked:7d} ({asked / base_asked:5.2f}x)  {seconds:7.2f} s "
              f"({seconds / base_seconds:5.2f}x)  CPU {cpu:7.2f} s ({cpu / base_cpu:5.3f}x, vanilla {base_cpu:.2f} s)")


def whole_command(names, repeats: int) -> None:
    """The second, whole-command view: ``staicc run --model reference --benchmarks Normal --methods vanilla`` against
    ``--methods vanilla,NAME``, each a fresh process (start-up, imports, the comparison tables and their bootstrap
    included), alternated in each round, best of ``repeats``: wall seconds and the child's CPU seconds."""
    import os
    import subprocess

    def once(methods: str):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "StaICC", "run", "--model", "reference", "--benchmarks", "Normal",
                        "--methods", methods], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=str(Path(__file__).resolve().parents[1]), env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter() - started, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    print("4. the whole command, each a fresh process (a second view; 3. above is the primary figure):")
    for name in names:
        best = {}
        for _ in range(repeats):
            for key in ("vanilla", name):
                seconds = once("vanilla" if key == "vanilla" else f"vanilla,{name}")
                old = best.get(key, seconds)
                best[key] = (min(old[0], seconds[0]), min(old[1], seconds[1]))
        (wall, cpu), (base_wall, base_cpu) = best[name], best["vanilla"]
        print(f"  {name:14s} {wall:6.2f} s wall ({wall / base_wall:5.2f}x, vanilla {base_wall:.2f} s)  CPU {cpu:6.2f} s "
              f"({cpu / base_cpu:5.2f}x, vanilla {base_cpu:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny", choices=sorted(SHAPES) + ["llama-3.2-1b"])
    parser.add_argument("--datasets", nargs="+", default=["TREC", "rotten_tomatoes"], help="or: all (Normal's ten)")
    parser.add_argument("--limit", type=int, default=None, help="test items per dataset in the cost runs (default all)")
    parser.add_argument("--skip-equality", action="store_true")
    parser.add_argument("--skip-cost", action="store_true", help="leave 2. out")
    parser.add_argument("--per-method", action="store_true", help="3. each method's cost against vanilla")
    parser.add_argument("--reference", action="store_true",
                        help="only 3., with the reference model on every dataset of Normal")
    parser.add_argument("--only", nargs="+", default=None, help="3. for these methods only")
    parser.add_argument("--repeats", type=int, default=2, help="3.: the best of this many runs each")
    parser.add_argument("--vanilla-once", action="store_true", help="3.: vanilla once a round, then every pair")
    parser.add_argument("--whole-command", action="store_true",
                        help="with --reference: also 4., each no-inference method (or --only) as whole staicc commands")
    args = parser.parse_args()
    import warnings
    warnings.simplefilter("ignore")  # the --limit and calibration warnings, once per dataset
    if args.reference:
        import numpy  # noqa: F401  (loaded before any run, as a model backend or a calibration loads it: every
        # run, vanilla's too, takes the same vectorised paths of the metrics' row arithmetic)
        from StaICC import Normal
        from StaICC.backends import make_backend
        per_method(lambda: make_backend("reference"), Normal().dataset_names(), args.limit,
                   "reference model, Normal, every dataset", args.only, args.repeats, args.vanilla_once)
        if args.whole_command:
            from StaICC.methods.builtin import BUILT_IN, table_order
            whole_command(table_order([n for n in BUILT_IN if n in (args.only or NO_INFERENCE)]), args.repeats)
        return
    import torch
    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    if args.datasets == ["all"]:
        from StaICC import Normal
        args.datasets = Normal().dataset_names()
    model, tokenizer = model_and_tokenizer(args.preset, args.datasets)
    vocab = model.get_output_embeddings().weight.shape[0]
    print(f"{args.preset}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, vocabulary {vocab}, "
          f"{next(model.parameters()).dtype} on {next(model.parameters()).device}"
          + (f" ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else ""))
    if not args.skip_equality:
        print("1. the hand-wired route, each prompt alone:")
        equality(model, tokenizer, args.datasets)
    if not args.skip_cost:
        print(f"2. cost on Normal, {args.limit or 'all'} test items per dataset, default batching:")
        cost(model, tokenizer, args.datasets, args.limit)
    if args.per_method:
        from StaICC.backends.hf import HFBackend
        per_method(lambda: HFBackend(model, tokenizer, model_id="bench"), list(args.datasets), args.limit,
                   f"{args.preset} preset, Normal on {', '.join(args.datasets)}, {args.limit or 'all'} test items",
                   args.only, args.repeats, args.vanilla_once)


if __name__ == "__main__":
    main()
