"""One run value: :class:`StaICC.results.run.Run`, loaded from a run directory or made from a result in memory.

The same run is taken both ways (``Run.from_result`` of a ``run_suite`` result, and ``Run.load`` of the
directory that run was written to): the parts, their numbers and their records agree, so the statistics,
the report and the exports read either.  A compound sub-benchmark is unfolded by ``spec.unfold`` alone.
"""
import dataclasses
import math
import re
import warnings
from pathlib import Path

import pytest

from StaICC.engine.selection import QuerySubset
from StaICC.errors import TamperingWarning
from StaICC.results.run import Part, Run
from StaICC.spec import unfold

PACKAGE = Path(__file__).resolve().parents[2] / "StaICC"


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from StaICC import run_suite
    from StaICC.backends.registry import make_backend
    from StaICC.runs import write
    backend = make_backend("reference")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)  # 12 test items: a departure, said once
        result = run_suite(backend, "Normal,Triplet_bias", datasets=["TREC"], test_items=QuerySubset.first(12),
                           progress=False)
    folder = str(tmp_path_factory.mktemp("run") / "suite")
    write(Run.from_result(result, backend), folder, log_samples="compact")
    return Run.from_result(result, label="memory"), Run.load(folder)


def test_a_loaded_run_and_a_run_in_memory_agree(both):
    memory, loaded = both
    assert list(memory.parts) == list(loaded.parts) == ["Normal", "Contextual_bias", "Domain_bias", "Post_bias"]
    for name in memory.parts:
        mine, theirs = memory.parts[name], loaded.parts[name]
        numbers = {m: v for m, v in mine.averaged.items() if isinstance(v, float) and math.isfinite(v)}
        assert numbers and numbers == {m: theirs.averaged[m] for m in numbers}, name
        assert mine.datasets() == theirs.datasets() == ["TREC"]
        assert mine.metadata["prompt_sha256"] == theirs.metadata["prompt_sha256"]
        rows = [[(r["query_index"], r["label"], r["predicted"]) for r in part.records["TREC"]]
                for part in (mine, theirs)]
        assert rows[0] == rows[1] and len(rows[0]) >= 12
    for run in (memory, loaded):
        assert [(p.label, p.benchmark) for p in run.parts.values()] == [
            ("Normal", "Normal"), ("Triplet_bias/contextual", "Triplet_bias"), ("Triplet_bias/domain", "Triplet_bias"),
            ("Triplet_bias/post", "Triplet_bias")]
    assert loaded.label == "suite" and loaded.samples_path.endswith("samples.jsonl")
    assert memory.model_name() == "memory" and loaded.model_name().startswith("reference")
    assert loaded.provenance["model"]["backend"] == "reference" and memory.provenance == {}


def test_statistics_read_either(both):
    pytest.importorskip("numpy", reason="the statistics need numpy (pip install \"StaICC[stats]\")")
    from StaICC.stats import compare_runs
    memory, loaded = both
    comparison = compare_runs(memory, loaded, resamples=20)
    assert comparison.paired
    assert all(diff.delta == 0 for diff in comparison.parts["Normal"].averaged.values()
               if isinstance(diff.delta, float))


def test_the_run_is_frozen(both):
    memory, _ = both
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.label = "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.parts["Normal"].name = "other"
    assert dataclasses.replace(memory, label="other").parts is memory.parts


def test_a_dry_run_has_no_parts():
    run = Run.from_result({"Normal": object()}, summarised=False)
    assert not run.summarised and run.parts == {} and not run.has_records()


def test_unfold_takes_a_compound_apart_and_leaves_a_missing_part_out():
    found = unfold({"Normal": 1, "Triplet_bias": {"contextual": 2, "post": 4}, "Mine": 5})
    assert [(u.benchmark, u.key, u.part, u.value, u.label) for u in found] == [
        ("Normal", "Normal", "Normal", 1, "Normal"),
        ("Triplet_bias", "contextual", "Contextual_bias", 2, "Triplet_bias/contextual"),
        ("Triplet_bias", "post", "Post_bias", 4, "Triplet_bias/post"),
        ("Mine", "Mine", "Mine", 5, "Mine")]
    alone = Part("Contextual_bias", {}, {})  # run on its own, not as Triplet_bias's part
    assert (alone.label, alone.benchmark, alone.records) == ("Contextual_bias", "Contextual_bias", {})


def test_a_compound_is_unfolded_in_one_function():
    """No module but spec.py maps a compound's (key, part) pairs onto a result: the others call ``unfold``.
    (``subbenchmarks/builtin.py`` makes the compound's members from its row; ``report/html.py`` orders the
    page's sections by the table; neither takes a result apart.)"""
    pattern = re.compile(r"\bparts_of\(|\bspec\.parts\b|\.compound\b.*\[key\]")
    found = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                   if pattern.search(path.read_text(encoding="utf-8")))
    assert found == ["report/html.py", "spec.py", "subbenchmarks/builtin.py"], found
