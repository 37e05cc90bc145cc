"""A lite run's steps inside :func:`~StaICC.runs.execute.execute`: its further looks, its full-run counts, its record.

The statistics (:mod:`StaICC.stats.lite_run`) estimate from records and the sub-benchmarks'
test labels; building the full run's sub-benchmarks and counting its prompts with a dry run is
the run's business, here: :func:`~StaICC.runs.execute.answer` asks a ``lite_until`` run's
further looks (:func:`continue_until`) and counts the full run's prompts while the backend is
open (:func:`full_counts_of`), :func:`~StaICC.runs.execute.record` makes the lite part of the
record (:func:`lite_record`).  ``StaICC.run_lite`` (:mod:`StaICC.runs.lite`) is ``execute`` of
a lite run.
"""
from dataclasses import replace
from typing import Any, Dict, Tuple

from ..stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from .build import Prepared, build_suite_of
from .config import RunConfig


#: where :func:`~StaICC.runs.execute.answer` hands a lite run's full-run counts on, in the result's metadata
FULL_RUN = "lite_full_run"


def full_run_counts(model: Any, suite: Dict[str, Any]) -> Dict[str, int]:
    """Prompts and distinct prompts of the full run of ``suite`` (built without a subset), counted by a dry run."""
    from ..engine.selection import Nothing
    from ..subbenchmarks.suite import run_suite
    counted = run_suite(model, suite=suite, selection=Nothing()).metadata
    return {"prompts": counted["prompts"], "distinct": counted["distinct_prompts"]}


def full_counts_of(config: RunConfig, backend: Any) -> Dict[str, int]:
    """The prompt counts of ``config``'s run on every test item (what a lite run of it saves)."""
    return full_run_counts(backend, build_suite_of(replace(config, test_items=None)))


def lite_record(prepared: Prepared, result: Any) -> Tuple[Any, Dict[str, Any]]:
    """(the estimates, the ``provenance.lite`` section) of a finished lite run, with the full run's counts (and,
    with a proxy, the proxy scored on every test item of that full run).  A run stopped by ``lite_until`` is
    estimated at its last look, with that look's interval level."""
    from ..stats.lite_run import lite_section
    full = result.metadata.pop(FULL_RUN, None)
    until = result.metadata.pop("lite_until", None)
    if until and until["stopped_at"] != prepared.config.lite_sample.fraction:
        prepared = at_fraction(prepared, until["stopped_at"])
    intervals = intervals_of(prepared.config)
    if until:
        intervals["level"] = until["look_level"]
    found, section = lite_section(result, prepared.config.lite_sample, prepared.suite, prepared.planned,
                                  full_counts=full, proxy=proxy_of(prepared.config), **intervals)
    if until:
        section["until"] = until
    return found, section


def intervals_of(config: RunConfig) -> Dict[str, Any]:
    """The lite run's interval options: its :class:`~StaICC.runs.config.LiteOptions`, the statistics' defaults
    where it names none."""
    options = config.lite_options
    return {"resamples": DEFAULT_RESAMPLES if options.resamples is None else options.resamples,
            "seed": DEFAULT_SEED if options.seed is None else options.seed,
            "level": DEFAULT_LEVEL if options.level is None else options.level}


def lite_config(config: RunConfig, section: Dict[str, Any]) -> RunConfig:
    """The configuration of the look a lite run's estimates come from (a ``lite_until`` run's last)."""
    until = section.get("until")
    if not until or until["stopped_at"] == config.lite_sample.fraction:
        return config
    from ..engine.selection import QuerySubset
    return replace(config, test_items=QuerySubset.lite(until["stopped_at"]))


def at_fraction(prepared: Prepared, fraction: float) -> Prepared:
    """``prepared`` at another lite fraction: its sub-benchmarks built and planned again (no inference)."""
    from ..engine.selection import QuerySubset
    from ..subbenchmarks.suite import plan_suite
    config = replace(prepared.config, test_items=QuerySubset.lite(fraction))
    suite = build_suite_of(config)
    return replace(prepared, config=config, suite=suite, planned=plan_suite(prepared.backend, suite))


def continue_until(prepared: Prepared, result: Any) -> Any:
    """The looks after the first of a ``lite_until`` run, until the widest reported half-width is at most the
    target or every item is asked: the last look's result, its ``metadata["lite_until"]`` saying where it stopped
    (each look asks only its new items when the run has a cache)."""
    from ..engine.selection import AnswerPolicy
    from ..stats.lite_run import lite_section
    from ..stats.lite_until import look_level, look_schedule, until_record, widest_half
    from ..subbenchmarks.suite import run_suite
    config = prepared.config
    looks = look_schedule(config.lite_sample.fraction)
    intervals = intervals_of(config)
    intervals["level"], widths, proxy = look_level(intervals["level"], len(looks)), [], proxy_of(config)
    look = prepared
    for fraction in looks:
        if fraction != looks[0]:
            look = at_fraction(prepared, fraction)
            result = run_suite(look.backend, suite=look.suite, planned=look.planned, cache=look.cache,
                               progress=config.progress, requests_per_call=config.requests_per_call,
                               policy=AnswerPolicy(exact_sum=config.exact_sum))
        found = lite_section(result, look.config.lite_sample, look.suite, look.planned, proxy=proxy, **intervals)[0]
        widths.append(widest_half(found.estimates))
        if widths[-1][0] <= config.lite_until:
            break
    result.metadata["lite_until"] = until_record(config.lite_until, intervals_of(config)["level"], looks, widths)
    return result


def proxy_of(config: RunConfig) -> Any:
    """The run's proxy: a loaded run's records, the reference model scored on the full suite, a tuple of those
    (several proxies combined), or None."""
    if isinstance(config.lite_proxy, (list, tuple)):
        return tuple(proxy_of(replace(config, lite_proxy=one)) for one in config.lite_proxy)
    if config.lite_proxy == "reference":
        from ..backends.reference import reference_backend  # the lexical model on every test item: free to run
        from ..stats.lite_proxy import proxy_of_run
        from ..subbenchmarks.suite import run_suite
        full = build_suite_of(replace(config, test_items=None))
        return proxy_of_run(run_suite(reference_backend(), suite=full, progress=False), "the reference model")
    return config.lite_proxy
