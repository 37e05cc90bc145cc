"""``staicc run --lite FRACTION`` / ``--lite-items N``: a lite run's arguments, estimates and tables.

The arguments are checked with the others, before any model loads: a share outside
(0, 1], a lite run with ``--limit`` or ``--methods``, or a machine without NumPy (which the
estimates need) is a one-line argument error.  After the run, the estimates of the full
run's numbers (:mod:`StaICC.stats.lite_run`) are printed instead of the subset's own
numbers, and recorded in ``results.json`` under ``provenance.lite``.
"""
import argparse
import math
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..validation import check_text, Integer
from .common import ArgumentError, as_argument_error, one_line


def add_lite_arguments(p: Any) -> None:
    p.add_argument("--lite", metavar="FRACTION",
                   help="lite run: ask a seeded, label-stratified FRACTION of every sub-benchmark's test items (the "
                        "same items for every model and run, e.g. 0.125) and print each standard metric as an "
                        "estimate of the full run's value with its interval (needs NumPy; non-standard)")
    p.add_argument("--lite-items", metavar="N",
                   help="lite run on N test items of each sub-benchmark and dataset, drawn as --lite draws them: a "
                        "stratified smoke run whose numbers are estimates of the full run")
    p.add_argument("--lite-until", metavar="HALFWIDTH",
                   help="with --lite FRACTION: ask further nested items (FRACTION, 2 FRACTION, ... 1) until every "
                        "reported interval's half-width is at most HALFWIDTH, each look's intervals at 1 - alpha/K "
                        "(K looks) so that they hold under this stopping rule (docs/lite.md)")
    p.add_argument("--lite-proxy", nargs="?", const="reference", metavar="RUN_DIR[,RUN_DIR...]",
                   help="with --lite or --lite-items: a proxy scored on every test item corrects the estimates (the "
                        "power-tuned difference estimator; docs/lite.md): the built-in reference model (the flag alone) or a run "
                        "directory of another model on the same prompts, made with --log-samples; several, comma-"
                        "separated (run directories and 'reference'), are combined with one weight each")


def lite_sample(args: argparse.Namespace) -> Optional[Any]:
    """The run's :class:`~StaICC.sampling.lite.LiteSample` (None: not a lite run), every conflict refused."""
    text, items = getattr(args, "lite", None), getattr(args, "lite_items", None)
    if text is None and items is None:
        return None
    if text is not None and items is not None:
        raise ArgumentError("--lite and --lite-items both choose a lite run's items; give one")
    if args.limit is not None:
        flag = "--lite" if text is not None else "--lite-items"
        raise ArgumentError(f"{flag} with --limit: both choose the test items; a lite run's items are already a "
                            "stratified sample (leave --limit out)")
    from ..sampling.lite import LiteSample
    if text is not None:
        try:
            fraction = float(text)
        except ValueError:
            raise ArgumentError(f"--lite must be a fraction of the test items in (0, 1], e.g. 0.125; got "
                                f"{one_line(text)!r}") from None
        if not 0 < fraction <= 1:
            hint = f" (for {text} items of each dataset use --lite-items {text})" if fraction > 1 and \
                fraction.is_integer() else ""
            raise ArgumentError(f"--lite must be a fraction of the test items in (0, 1], e.g. 0.125; got "
                                f"{one_line(text)}{hint}")
        sample = LiteSample(fraction=fraction)
    else:
        sample = LiteSample(items=as_argument_error(check_text, items, Integer(1, text="a positive integer"),
                                                    "--lite-items"))
    from ..stats.lite_run import require_numpy
    as_argument_error(require_numpy)
    return sample


def lite_proxy(args: argparse.Namespace, reads: Optional[Callable[[str, str], bool]] = None) -> Any:
    """``--lite-proxy``: None, "reference", a :class:`~StaICC.stats.lite_proxy.Proxy` read from a run
    directory, or a tuple of those (``DIR1,DIR2,reference``: several proxies combined); a one-line argument
    error where a run cannot be read, has no records, or is named twice.  ``reads``: :func:`proxy_reads`."""
    given = getattr(args, "lite_proxy", None)
    if given is None:
        return None
    if getattr(args, "lite", None) is None and getattr(args, "lite_items", None) is None:
        raise ArgumentError("--lite-proxy needs --lite or --lite-items: a proxy narrows a lite run's intervals")
    import os
    if not given.strip():
        raise ArgumentError("--lite-proxy got an empty name; give a run directory made with --log-samples, "
                            "'reference' (the flag alone), or several comma-separated")
    if given == "reference" or "," not in given or os.path.isdir(given):
        return _one_proxy(given, reads)
    names = given.split(",")
    seen: Dict[str, str] = {}
    for name in names:
        if not name:
            raise ArgumentError(f"--lite-proxy {one_line(given)}: an empty name in the comma-separated list; give "
                                "run directories or 'reference', e.g. --lite-proxy runs/a,runs/b,reference")
        key = name if name == "reference" else os.path.realpath(name)
        if key in seen:
            raise ArgumentError(f"--lite-proxy {one_line(given)}: {one_line(name)} is named twice (as "
                                f"{one_line(seen[key])}); each proxy once")
        seen[key] = name
    return tuple(_one_proxy(name, reads) for name in names)


def proxy_reads(benchmarks: Any, tasks: Sequence[Any],
                datasets: Optional[Sequence[Any]]) -> Optional[Callable[[str, str], bool]]:
    """(part, dataset) -> whether the lite run of ``benchmarks`` on ``datasets`` (None: their own) reads a proxy's
    statistic of it; None (every one) for a run of task files.  A proxy run's other parts are checked on a table
    that is not kept, as before (a lite run of Normal with a proxy run of the whole suite holds Normal's only)."""
    if tasks:
        return None
    from ..spec import part_names
    from ..subbenchmarks.suite import resolve_benchmark_names
    parts = {part for name in resolve_benchmark_names(benchmarks) for part in part_names(name)}
    names = None if datasets is None else {getattr(d, "name", d) for d in datasets}
    return lambda part, dataset: part in parts and (names is None or dataset in names)


def _one_proxy(given: str, reads: Optional[Callable[[str, str], bool]] = None) -> Any:
    """One ``--lite-proxy`` name: "reference", or the :class:`~StaICC.stats.lite_proxy.Proxy` of a run directory
    made with --log-samples.  The edited-records check reads, for each (part, dataset) the lite run reads
    (``reads``; None: every one), the item table the proxy's own statistic is built on: one table for both."""
    if given == "reference":
        return given
    from ..report.runs import load_run
    from ..stats.lite_proxy import proxy_of_run
    try:
        run = load_run(given)
    except (ValueError, OSError) as error:
        raise ArgumentError(f"--lite-proxy {one_line(given)}: {one_line(str(error))}") from None
    if not getattr(run, "parts", None) or not any(part.records for part in run.parts.values()):
        raise ArgumentError(f"--lite-proxy {one_line(given)}: the run has no records (samples.jsonl); a proxy run "
                            "must be made with --log-samples")
    from ..stats.bootstrap import dataset_statistic
    proxy = as_argument_error(proxy_of_run, run, given)
    for part in run.parts.values():  # records edited after the run: refused, as staicc report and compare refuse them
        for dataset in part.datasets() if part.records else ():
            shared = reads is None or reads(part.name, dataset)
            try:
                dataset_statistic(part, dataset, table=proxy.statistic(part.name, dataset).table if shared else None)
            except ValueError as error:
                raise ArgumentError(f"--lite-proxy {one_line(given)}: {one_line(str(error))}") from None
    return proxy


def lite_until(args: argparse.Namespace) -> Optional[float]:
    """``--lite-until``: the target half-width (None: a lite run of one look); a one-line error otherwise."""
    text = getattr(args, "lite_until", None)
    if text is None:
        return None
    if getattr(args, "lite", None) is None:
        raise ArgumentError("--lite-until needs --lite FRACTION, the first look's share of the test items")
    from ..stats.lite_until import check_halfwidth
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    try:
        return check_halfwidth(number)
    except ValueError:
        if number >= 1:  # a percentage given for a share: every interval is that narrow at the first look
            raise ArgumentError(f"--lite-until must be a half-width below 1, on the metrics' own scale (0.02: two "
                                f"points of accuracy); got {one_line(text)}") from None
        raise ArgumentError(f"--lite-until must be a half-width > 0, e.g. 0.02; got {one_line(text)!r}") from None


def counts_line(section: Dict[str, Any]) -> str:
    """The lite run's prompts against the full run's: what the lite run saved."""
    mine, full = section["prompts"], section.get("full_run")
    line = f"lite run: {mine['prompts']} prompts, {mine['distinct']} distinct"
    if full:
        ratio = full["distinct"] / mine["distinct"] if mine["distinct"] else float("inf")
        saving = f"{ratio:.1f}x fewer prompts to ask" if full["distinct"] != mine["distinct"] else \
            "every prompt of the full run"
        line += f"; the full run: {full['prompts']} prompts, {full['distinct']} distinct: {saving}"
    until = section.get("until")
    if until:
        widest = until["looks"][-1]["widest_halfwidth"]
        line = (f"--lite-until {until['halfwidth']:g}: {'reached' if until['reached'] else 'not reached'} after "
                f"{len(until['looks'])} of {len(until['schedule'])} looks (widest half-width {widest:.4g}; each "
                f"look's intervals at {until['look_level']:.2%}, so that they hold at {until['level']:.0%} under "
                f"the stopping rule)\n{looks_line(until)}\n") + line
    return line


def looks_line(until: Dict[str, Any]) -> str:
    """Each look of a ``--lite-until`` run: its share, its widest half-width and where that was."""
    from ..sampling.lite import percent
    said = []
    for look in until["looks"]:
        width, where = look["widest_halfwidth"], look["where"]
        if width is None or where.endswith("(not yet estimable)"):
            said.append(f"{percent(look['fraction'])}: {where}")
        else:
            said.append(f"{percent(look['fraction'])}: {width:.4g}" + (f" at {where}" if where else " (every item)"))
    return "looks (widest half-width): " + "; ".join(said)


def print_lite_tables(result: Any, section: Dict[str, Any], config: Any, model: str) -> None:
    """Each sub-benchmark's estimates (the subset's own numbers are only in results.json)."""
    from ..report.lite_tables import lite_tables
    from ..report.render import render_text
    from ..results.run import Run
    parts = [(part.label, part) for part in Run.from_result(result).parts.values()]
    for table in lite_tables(section, parts, f"{model}, k={config.k}"):
        print(render_text(table))
        print()


def dry_run_line(config: Any, metadata: Dict[str, Any]) -> str:
    """A lite dry run's prompts against the full run's (counted by :func:`StaICC.runs.execute` while the backend
    was open, ``metadata[FULL_RUN]``)."""
    from ..runs.lite_record import FULL_RUN
    section = {"prompts": {"prompts": metadata["prompts"], "distinct": metadata["distinct_prompts"]},
               "full_run": metadata[FULL_RUN]}
    line = f"{counts_line(section)} ({config.test_items.lite_sample.description})"
    return line + "".join(f"\n{said}" for said in proxy_lines(config.lite_proxy))


def proxy_lines(proxy: Any) -> List[str]:
    """What a dry run says of its proxies: each run directory accepted, with the model its run asked (redacted:
    ``Proxy.model``), where its records hold every test item and every planned prompt's SHA-256
    (:func:`StaICC.runs.build.prepare` checked them); the reference model scored in the run itself."""
    proxies = proxy if isinstance(proxy, (list, tuple)) else [proxy]
    runs = [(p.name, f" ({p.model})" if p.model else "") for p in proxies if p is not None and p != "reference"]
    lines = [f"proxy {name}{model}: accepted (its records hold every test item, and every planned prompt's SHA-256)"
             for name, model in runs]
    return lines + (["proxy: the reference model, scored on every test item in the run"]
                    if "reference" in proxies else [])
