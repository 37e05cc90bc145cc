"""A lite run on the application floor: ``run_lite`` is :func:`StaICC.runs.execute` of the run its arguments
make, and a lite run's full-run counts are counted once by ``execute`` (``staicc run --lite --dry-run`` prints
them; a summarised lite run records them in ``provenance.lite``)."""
import warnings

import pytest

from StaICC.backends.reference_model import lexical_icl
from StaICC.cache import PredictionCache
from StaICC.engine.selection import Nothing, QuerySubset
from StaICC.errors import TamperingWarning
from StaICC.runs import RunConfig, execute
from StaICC.runs.lite import run_lite
from StaICC.runs.lite_record import FULL_RUN
from StaICC.subbenchmarks.suite import build_suite, run_suite

pytest.importorskip("numpy")

DATASETS = ("TREC", "financial_phrasebank")


def full_counts(benchmarks):
    """The full run's prompts counted independently: a dry run of the suite built on every test item."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        counted = run_suite(lexical_icl, suite=build_suite(benchmarks, list(DATASETS), 4),
                            selection=Nothing()).metadata
    return {"prompts": counted["prompts"], "distinct": counted["distinct_prompts"]}


def test_a_lite_dry_run_carries_the_full_runs_counts_and_a_lite_run_records_them_outside_the_suite():
    config = RunConfig(benchmarks="Normal,GLER", datasets=DATASETS, test_items=QuerySubset.lite(0.125),
                       progress=False)
    expected = full_counts("Normal,GLER")
    dry = execute(RunConfig(**{**config.__dict__, "selection": Nothing()}))
    assert dry.metadata[FULL_RUN] == expected and dry.metadata["prompts"] < expected["prompts"]
    run = execute(config)
    assert run.provenance["lite"]["full_run"] == expected
    assert FULL_RUN not in run.provenance["suite"] and FULL_RUN not in run.result.metadata


def test_run_lite_leaves_a_given_cache_open_and_closes_one_it_opened(tmp_path):
    path = str(tmp_path / "answers.sqlite")
    cache = PredictionCache(path)
    first = run_lite(lexical_icl, 0.125, "Normal", datasets=list(DATASETS), cache=cache, progress=False)
    assert first.metadata["asked"] > 0
    assert cache.stats()["entries"] > 0  # still open (a closed cache refuses to be read), the answers in it
    cache.close()
    again = run_lite(lexical_icl, 0.125, "Normal", datasets=list(DATASETS), cache=path, progress=False)
    assert again.metadata["asked"] == 0 and again.metadata["from_cache"] == first.metadata["asked"]
    assert again.metadata["lite"]["estimates"] == first.metadata["lite"]["estimates"]


def test_run_lite_builds_its_sub_benchmarks_as_run_suite_does_and_counts_no_full_run():
    result = run_lite(lexical_icl, 0.125, "Normal", datasets=list(DATASETS), progress=False)
    assert "full_run" not in result.metadata["lite"] and FULL_RUN not in result.metadata
    # staicc run's own-distribution columns are the CLI's; a notebook's run_suite has none
    assert "own_likelihood_nonstandard" not in result["Normal"]["Averaged results"]
    cli = execute(RunConfig(benchmarks="Normal", datasets=DATASETS, test_items=QuerySubset.lite(0.125),
                            progress=False))
    assert "own_likelihood_nonstandard" in cli.result["Normal"]["Averaged results"]
