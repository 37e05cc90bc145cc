"""``staicc run --lite FRACTION`` / ``--lite-items N``: a lite run's arguments, estimates and tables.

The arguments are checked with the others, before any model loads: a share outside
(0, 1], a lite run with ``--limit`` or ``--methods``, or a machine without NumPy (which the
estimates need) is a one-line argument error.  After the run, the estimates of the full
run's numbers (:mod:`StaICC.stats.lite_run`) are printed instead of the subset's own
numbers, and recorded in ``results.json`` under ``provenance.lite``.
"""
import argparse
from typing import Any, Dict, List, Optional, Tuple

from .common import ArgumentError, as_argument_error, one_line


def add_lite_arguments(p: Any) -> None:
    p.add_argument("--lite", metavar="FRACTION",
                   help="lite run: ask a seeded, label-stratified FRACTION of every sub-benchmark's test items (the "
                        "same items for every model and run, e.g. 0.125) and print each standard metric as an "
                        "estimate of the full run's value with its interval (needs NumPy; non-standard)")
    p.add_argument("--lite-items", type=int, metavar="N",
                   help="lite run on N test items of each sub-benchmark and dataset, drawn as --lite draws them: a "
                        "stratified smoke run whose numbers are estimates of the full run")
    p.add_argument("--lite-until", metavar="HALFWIDTH",
                   help="with --lite FRACTION: ask further nested items (FRACTION, 2 FRACTION, ... 1) until every "
                        "reported interval's half-width is at most HALFWIDTH, each look's intervals at 1 - alpha/K "
                        "(K looks) so that they hold under this stopping rule (docs/lite.md)")
    p.add_argument("--lite-proxy", nargs="?", const="reference", metavar="RUN_DIR",
                   help="with --lite or --lite-items: a proxy scored on every test item narrows the intervals (the "
                        "difference estimator; docs/lite.md): the built-in reference model (the flag alone) or a run "
                        "directory of another model on the same prompts, made with --log-samples")


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
        if items < 1:
            raise ArgumentError(f"--lite-items must be a positive integer, got {items}")
        sample = LiteSample(items=items)
    from ..stats.lite_run import require_numpy
    as_argument_error(require_numpy)
    return sample


def lite_proxy(args: argparse.Namespace) -> Any:
    """``--lite-proxy``: None, "reference", or a :class:`~StaICC.stats.lite_proxy.Proxy` read from a run
    directory (a one-line argument error where it cannot be read or has no records)."""
    given = getattr(args, "lite_proxy", None)
    if given is None:
        return None
    if getattr(args, "lite", None) is None and getattr(args, "lite_items", None) is None:
        raise ArgumentError("--lite-proxy needs --lite or --lite-items: a proxy narrows a lite run's intervals")
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
    return as_argument_error(proxy_of_run, run, given)


def lite_until(args: argparse.Namespace) -> Optional[float]:
    """``--lite-until``: the target half-width (None: a lite run of one look); a one-line error otherwise."""
    text = getattr(args, "lite_until", None)
    if text is None:
        return None
    if getattr(args, "lite", None) is None:
        raise ArgumentError("--lite-until needs --lite FRACTION, the first look's share of the test items")
    from ..stats.lite_until import check_halfwidth
    try:
        return check_halfwidth(float(text))
    except ValueError:
        raise ArgumentError(f"--lite-until must be a half-width > 0, e.g. 0.02; got {one_line(text)!r}") from None


def continue_until(config: Any, backend: Any, cache: Any, suite: Dict[str, Any], planned: Dict[str, Any],
                   result: Any) -> Tuple[Any, Dict[str, Any], Dict[str, Any], Any]:
    """The looks after the first of a ``--lite-until`` run, until the widest reported half-width is at most
    the target: (the config, suite, plan and result of the last look; its ``metadata["lite_until"]`` says why)."""
    from dataclasses import replace

    from ..engine.selection import QuerySubset
    from ..stats.lite_run import lite_section
    from ..stats.lite_until import look_level, look_schedule, until_record, widest_half
    from ..subbenchmarks.suite import plan_suite, run_suite
    from .run_config import build_suite_of
    looks = look_schedule(config.test_items.lite_sample.fraction)
    level, widths = look_level(0.95, len(looks)), []
    for fraction in looks:
        if fraction != looks[0]:
            config = replace(config, test_items=QuerySubset.lite(fraction))
            suite = build_suite_of(config)
            planned = plan_suite(backend, suite)
            result = run_suite(backend, suite=suite, planned=planned, cache=cache, progress=config.progress,
                               requests_per_call=config.requests_per_call)
        found = lite_section(result, config.test_items.lite_sample, suite, planned, level=level,
                             proxy=_proxy_of(config))[0]
        widths.append(widest_half(found.estimates))
        if widths[-1][0] <= config.lite_until:
            break
    result.metadata["lite_until"] = until_record(config.lite_until, 0.95, looks, widths)
    return config, suite, planned, result


def _proxy_of(config: Any) -> Any:
    """The run's proxy: a loaded run's records, the reference model scored on the full suite, or None."""
    proxy = getattr(config, "lite_proxy", None)
    if proxy == "reference":
        from dataclasses import replace

        from ..stats.lite_proxy import reference_proxy
        from .run_config import build_suite_of
        return reference_proxy(build_suite_of(replace(config, test_items=None)))
    return proxy


def check_lite_proxy(config: Any, planned: Dict[str, Any]) -> None:
    """A proxy run of other prompts, other items or another label space: a one-line error before inference."""
    proxy = getattr(config, "lite_proxy", None)
    if proxy is not None and proxy != "reference":
        from ..stats.lite_proxy import check_proxy
        try:
            check_proxy(proxy, planned)
        except ValueError as error:
            raise ArgumentError(f"--lite-proxy: {one_line(str(error))}") from None


def lite_run_section(config: Any, backend: Any, suite: Dict[str, Any], planned: Dict[str, Any],
                     result: Any) -> Tuple[Any, Dict[str, Any]]:
    """(the estimates, the ``provenance.lite`` section) of a finished lite run, with the full run's counts (and,
    with ``--lite-proxy``, its proxy scored on every test item of that full run)."""
    from dataclasses import replace

    from ..stats.lite_run import full_run_counts, lite_section
    from .run_config import build_suite_of
    full = full_run_counts(backend, build_suite_of(replace(config, test_items=None)))
    until = result.metadata.pop("lite_until", None)
    level = until["look_level"] if until else 0.95
    found, section = lite_section(result, config.test_items.lite_sample, suite, planned, full_counts=full,
                                  proxy=_proxy_of(config), level=level)
    if until:
        section["until"] = until
    return found, section


def counts_line(section: Dict[str, Any]) -> str:
    """The lite run's prompts against the full run's: what the lite run saved."""
    mine, full = section["prompts"], section.get("full_run")
    line = f"lite run: {mine['prompts']} prompts, {mine['distinct']} distinct"
    if full:
        ratio = full["distinct"] / mine["distinct"] if mine["distinct"] else float("inf")
        line += (f"; the full run: {full['prompts']} prompts, {full['distinct']} distinct: {ratio:.1f}x fewer "
                 "prompts to ask")
    until = section.get("until")
    if until:
        widest = until["looks"][-1]["widest_halfwidth"]
        line = (f"--lite-until {until['halfwidth']:g}: {'reached' if until['reached'] else 'not reached'} after "
                f"{len(until['looks'])} of {len(until['schedule'])} looks (widest half-width {widest:.4g}; each "
                f"look's intervals at {until['look_level']:.2%}, so that they hold at {until['level']:.0%} under "
                f"the stopping rule)\n") + line
    return line


def print_lite_tables(result: Any, section: Dict[str, Any], config: Any, model: str) -> None:
    """Each sub-benchmark's estimates (the subset's own numbers are only in results.json)."""
    from ..report.lite_tables import lite_tables
    from ..report.render import render_text
    from ..spec import parts_of
    parts: List[Tuple[str, str, Any]] = []
    for name, bench_result in result.items():
        pairs = parts_of(name)
        compound = not (len(pairs) == 1 and pairs[0][1] == name)
        for key, part_name in pairs:
            part = bench_result[key] if compound else bench_result
            parts.append((part_name, f"{name}/{key}" if compound else name, part))
    for table in lite_tables(section, parts, f"{model}, k={config.k}"):
        print(render_text(table))
        print()


def dry_run_line(config: Any, backend: Any, metadata: Dict[str, Any]) -> str:
    """A lite dry run's prompts against the full run's (counted by a second dry run, no prompt written)."""
    from dataclasses import replace

    from ..stats.lite_run import full_run_counts
    from .run_config import build_suite_of
    full = full_run_counts(backend, build_suite_of(replace(config, test_items=None)))
    section = {"prompts": {"prompts": metadata["prompts"], "distinct": metadata["distinct_prompts"]},
               "full_run": full}
    return f"{counts_line(section)} ({config.test_items.lite_sample.description})"
