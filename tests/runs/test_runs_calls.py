"""``StaICC.run_suite`` and ``StaICC.run_methods`` are ``execute`` of the run their arguments make.

Each keyword of the public calls is run both ways, through the façade (``runs/calls.py``, which
calls :func:`StaICC.runs.execute`) and through the engine function it replaces
(``subbenchmarks/suite.py``, ``methods/run.py``), on the reference model and a few TREC items:
the results, records and counts are the same (only the wall time in ``metadata["seconds"]``
differs).  The façade assembles no record: no provenance, no methods' tests against vanilla.
"""
import io

import pytest

import StaICC
from StaICC.backends.reference_model import lexical_icl
from StaICC.engine.selection import STORE_ONLY, AnswerPolicy, Nothing, QuerySubset, Shard
from StaICC.methods.run import run_methods as engine_methods
from StaICC.subbenchmarks.suite import build_suite, plan_suite
from StaICC.subbenchmarks.suite import run_suite as engine_suite

SMALL = {"datasets": ["TREC"], "test_items": QuerySubset.first(8), "progress": False}

pytestmark = pytest.mark.filterwarnings("ignore")  # a smoke run's departures from the standard are warned about


def same(mine, theirs):
    """The same results, records and counts (``seconds``: each run's own wall time)."""
    assert dict(mine) == dict(theirs)
    drop = ("seconds",)
    assert {k: v for k, v in mine.metadata.items() if k not in drop} == \
        {k: v for k, v in theirs.metadata.items() if k not in drop}
    assert list(getattr(mine, "records", [])) == list(getattr(theirs, "records", []))


def test_the_public_names_are_the_runs_floors_and_the_engines_stay():
    import inspect

    from StaICC.runs import calls
    assert StaICC.run_suite is calls.run_suite and StaICC.run_methods is calls.run_methods
    assert engine_suite.__module__ == "StaICC.subbenchmarks.suite" and engine_methods.__module__ == "StaICC.methods.run"
    for mine, theirs in ((StaICC.run_suite, engine_suite), (StaICC.run_methods, engine_methods)):
        # every parameter, in order, of the same kind and default: every call that worked works
        assert [(p.name, p.kind, p.default) for p in inspect.signature(mine).parameters.values()] == \
            [(p.name, p.kind, p.default) for p in inspect.signature(theirs).parameters.values()]


@pytest.mark.parametrize("keywords", [
    {}, {"own_distribution": True}, {"k": 2}, {"noisy_channel": True}, {"exact_sum": "original"},
    {"prediction_kind": "probabilities"}, {"model_id": "lexical"}, {"requests_per_call": 3},
    {"benchmarks": ["Normal", "Triplet_bias"]}])
def test_run_suite_gives_the_engines_result(keywords):
    keywords = dict(SMALL, **keywords)
    benchmarks = keywords.pop("benchmarks", "Normal")
    same(StaICC.run_suite(lexical_icl, benchmarks, **keywords), engine_suite(lexical_icl, benchmarks, **keywords))


def test_run_suite_runs_sub_benchmarks_built_beforehand_and_their_plan():
    suite = build_suite("Normal", ["TREC"], test_items=QuerySubset.first(8))
    planned = plan_suite(None, suite)
    mine = StaICC.run_suite(lexical_icl, suite=suite, planned=planned, progress=False)
    same(mine, engine_suite(lexical_icl, suite=build_suite("Normal", ["TREC"], test_items=QuerySubset.first(8)),
                            progress=False))


def test_run_suite_selections_and_policies_are_the_engines(tmp_path):
    measured, theirs_measured = [], []
    counted = StaICC.run_suite(lexical_icl, "Normal", selection=Nothing(measure=lambda w, r: measured.append(len(r))),
                               **SMALL)
    same(counted, engine_suite(lexical_icl, "Normal", selection=Nothing(measure=lambda w, r: theirs_measured.append(
        len(r))), **SMALL))
    assert measured == theirs_measured and sum(measured) == counted.metadata["distinct_prompts"] > 0
    for shard in ((0, 2), Shard(1, 2)):
        same(StaICC.run_suite(lexical_icl, "Normal", cache=str(tmp_path / "mine.sqlite"), shard=shard, **SMALL),
             engine_suite(lexical_icl, "Normal", cache=str(tmp_path / "theirs.sqlite"), shard=shard, **SMALL))
    assert StaICC.run_suite(lexical_icl, "Normal", cache=str(tmp_path / "mine.sqlite"), **SMALL).metadata["asked"] == 0
    stored = StaICC.run_suite(lexical_icl, "Normal", cache=str(tmp_path / "stored.sqlite"), policy=STORE_ONLY, **SMALL)
    same(stored, engine_suite(lexical_icl, "Normal", cache=str(tmp_path / "theirs_stored.sqlite"), policy=STORE_ONLY,
                              **SMALL))
    assert dict(stored) == {} and stored.metadata["asked"] == 16  # stored, nothing summarised
    assert StaICC.run_suite(lexical_icl, "Normal", cache=str(tmp_path / "stored.sqlite"), **SMALL).metadata["asked"] == 0


def test_run_suite_writes_out_prompts_where_its_policy_says():
    mine, theirs = io.StringIO(), io.StringIO()
    StaICC.run_suite(lexical_icl, "Normal", policy=AnswerPolicy(write_out=1, out=mine.write), **SMALL)
    engine_suite(lexical_icl, "Normal", policy=AnswerPolicy(write_out=1, out=theirs.write), **SMALL)
    assert mine.getvalue() == theirs.getvalue() and "TREC" in mine.getvalue()


def test_run_suite_refuses_what_the_engine_refuses():
    for call in (StaICC.run_suite, engine_suite):
        with pytest.raises(ValueError, match="unknown sub-benchmark 'Nrmal'"):
            call(lexical_icl, "Nrmal", **SMALL)
        with pytest.raises(ValueError, match="the shard index"):
            call(lexical_icl, "Normal", shard=(2, 2), **SMALL)


def test_run_methods_gives_the_engines_result_without_testing_the_methods(monkeypatch):
    import StaICC.methods.compare as compare

    def refused(*_args, **_options):
        raise AssertionError("run_methods tested the methods against vanilla (a bootstrap it never asked)")

    mine = StaICC.run_methods(lexical_icl, ["contextual", "noisy_channel"], "Normal", **SMALL)
    theirs = engine_methods(lexical_icl, ["contextual", "noisy_channel"], "Normal", **SMALL)
    assert list(mine) == list(theirs) == ["vanilla", "contextual", "noisy_channel"]
    for name in mine:
        same(mine[name], theirs[name])
    same(mine, theirs)
    monkeypatch.setattr(compare, "compare_methods", refused)
    StaICC.run_methods(lexical_icl, ["contextual"], "Normal", **SMALL)
    with pytest.raises(AssertionError, match="never asked"):
        mine.compare()  # asked for, the tests are made (here: by the refusing stand-in)


def test_run_methods_runs_sub_benchmarks_built_beforehand():
    def built(noisy=False):
        return build_suite("Normal", ["TREC"], test_items=QuerySubset.first(8), noisy_channel=noisy)
    mine = StaICC.run_methods(lexical_icl, ["noisy_channel"], suite=built(), noisy_suite=built(True), progress=False)
    theirs = engine_methods(lexical_icl, ["noisy_channel"], suite=built(), noisy_suite=built(True), progress=False)
    same(mine["noisy_channel"], theirs["noisy_channel"])
    for call in (StaICC.run_methods, engine_methods):
        with pytest.raises(ValueError, match=r"needs them built in noisy-channel mode too: give noisy_suite="):
            call(lexical_icl, ["noisy_channel"], suite=built(), progress=False)


def test_execute_without_its_record_gives_the_answers_alone(tmp_path):
    from StaICC.runs import RunConfig, execute, write
    config = RunConfig(datasets=("TREC",), test_items=QuerySubset.first(8), progress=False)
    bare, full = execute(config, recorded=False), execute(config)
    assert bare.provenance is None and not bare.parts and full.provenance["model"]["backend"] == "reference"
    same(bare.result, full.result)
    with pytest.raises(ValueError, match=r"without its record \(recorded=False\): write Run.from_result"):
        write(bare, str(tmp_path / "bare"))
