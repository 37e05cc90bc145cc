"""A lite run's record: its estimates of the full run and the full run's prompt counts.

The statistics (:mod:`StaICC.stats.lite_run`) estimate from records and the sub-benchmarks'
test labels; building the full run's sub-benchmarks and counting its prompts with a dry run is
the run's business, here.
"""
from dataclasses import replace
from typing import Any, Dict, Tuple

from .build import Prepared, build_suite_of
from .config import RunConfig


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
    """(the estimates, the ``provenance.lite`` section) of a finished lite run, with the full run's counts."""
    from ..stats.lite_run import lite_section
    full = full_counts_of(prepared.config, prepared.backend)
    return lite_section(result, prepared.config.lite_sample, prepared.suite, prepared.planned, full_counts=full)
