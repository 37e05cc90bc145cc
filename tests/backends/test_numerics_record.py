"""The numerics record: what answers were computed under, kept beside them, compared by cache merge and compare."""
import json

import pytest

from StaICC.backends.numerics import (REFUSED, WARNED, answer_numerics, comparison_notes, exact_sum_record,
                                      merged_settings, numerics_conflicts, numerics_record)
from StaICC.backends.reference import ReferenceBackend
from StaICC.backends.base import FunctionBackend
from StaICC.cache import CacheError, PredictionCache
from StaICC.cache.merge import merge_caches
from StaICC.cli import main
from StaICC.requests import Answer, Request

HF = {"backend": "hf", "prediction_kind": "probabilities", "reproducible": False, "requests_per_call": 256,
      "packages": {"torch": "2.13.0", "transformers": "5.24.0"}, "dtype": "float32", "threads": 2,
      "device": "cpu (Xeon)", "packing": "prefix", "rows_per_forward": None, "token_budget": 4096,
      "attention": "sdpa", "switched_off": []}


def test_answer_numerics_of_the_built_in_models_and_a_function():
    reference = answer_numerics(ReferenceBackend("lexical"))
    assert reference["backend"] == "reference" and reference["reproducible"] is True
    assert reference["prediction_kind"] is None and reference["requests_per_call"] == 256
    function = answer_numerics(FunctionBackend(lambda **_: 0, prediction_kind="logits"), 7)
    assert function["prediction_kind"] == "logits" and function["requests_per_call"] == 7
    assert "device" not in function  # a plain function does not say where it computes: not guessed
    json.dumps(reference), json.dumps(function)


def test_conflicts_refuse_kernels_and_warn_on_the_shape_of_the_work():
    assert numerics_conflicts(HF, dict(HF)) == []
    device = numerics_conflicts(HF, dict(HF, device="cuda:0 (NVIDIA H100)"))
    assert [(c.field, c.refuse) for c in device] == [("device", True)]
    assert "beyond the last bits" in str(device[0])
    versions = numerics_conflicts(HF, dict(HF, packages={"torch": "2.13.0", "transformers": "5.23.0"}))
    assert [c.field for c in versions] == ["packages"] and versions[0].refuse
    shape = numerics_conflicts(HF, dict(HF, threads=1, packing="tree", requests_per_call=7))
    assert sorted(c.field for c in shape) == ["packing", "requests_per_call", "threads"]
    assert not any(c.refuse for c in shape) and "rounding of the work differs" in str(shape[0])
    assert set(REFUSED).isdisjoint(WARNED)


def test_reproducible_answers_never_conflict_and_missing_records_are_not_compared():
    a = answer_numerics(ReferenceBackend("lexical"))
    assert numerics_conflicts(a, dict(a, threads=8, requests_per_call=1, packages={"torch": "x"})) == []
    assert numerics_conflicts(None, HF) == [] and numerics_conflicts(HF, {"answers": HF}) == []


def test_a_package_only_one_process_had_loaded_is_not_a_conflict():
    """A function model's process that had imported torch for something else records it; one that had not, does
    not: torch computed none of the second's answers, so only the packages both loaded are compared."""
    function = answer_numerics(FunctionBackend(lambda **_: 0, prediction_kind="logits"), 7)
    loaded = dict(function, packages={"torch": "2.13.0"})
    bare = dict(function, packages={})
    assert numerics_conflicts(loaded, bare) == []
    partial = numerics_conflicts(HF, dict(HF, packages={"torch": "2.13.0"}))
    assert partial == []  # transformers only in one: torch, in both, agrees
    moved = numerics_conflicts(HF, dict(HF, packages={"torch": "2.12.0"}))
    assert [(c.field, c.first, c.second) for c in moved] == [("packages", {"torch": "2.13.0"}, {"torch": "2.12.0"})]


def test_merged_settings_lists_refusals_unless_mixing_is_allowed():
    first = {"f" * 64: [HF]}
    second = {"f" * 64: [dict(HF, device="cuda:0 (NVIDIA H100)", threads=1)]}
    merged = merged_settings([first, second])
    assert len(merged["refused"]) == 1 and "device" in merged["refused"][0]
    assert len(merged["warnings"]) == 1 and "threads" in merged["warnings"][0]
    assert merged["settings"]["f" * 64] == [HF, second["f" * 64][0]]
    allowed = merged_settings([first, second], allow_mixed=True)
    assert allowed["refused"] == [] and len(allowed["warnings"]) == 2


def store(path, fingerprint, settings, answers):
    with PredictionCache(path) as cache:
        requests = [Request(f"prompt {i}", ("a", "b")) for i in range(len(answers))]
        cache.store(fingerprint, requests, [Answer(a) for a in answers])
        cache.note_numerics(fingerprint, settings)
        cache.note_numerics(fingerprint, settings)  # kept once


def test_cache_merge_refuses_answers_computed_on_different_devices_and_keeps_the_notes(tmp_path, capsys):
    fingerprint = "a" * 64
    store(tmp_path / "s0", fingerprint, HF, [[0.25, 0.75]])
    store(tmp_path / "s1", fingerprint, dict(HF, device="cuda:0 (NVIDIA H100)"), [[0.25, 0.75], [0.5, 0.5]])
    with PredictionCache(tmp_path / "s0") as cache:
        assert cache.numerics_notes() == {fingerprint: [HF]}
    with pytest.raises(CacheError, match="beyond the last bits.*device.*--allow-mixed-numerics"):
        merge_caches(tmp_path / "out", [tmp_path / "s0", tmp_path / "s1"])
    assert not (tmp_path / "out").exists() or PredictionCache(tmp_path / "out").stats()["entries"] == 0
    assert main(["cache", "merge", str(tmp_path / "out"), str(tmp_path / "s0"), str(tmp_path / "s1")]) == 1
    assert "nothing was merged" in capsys.readouterr().err
    assert main(["cache", "merge", "--allow-mixed-numerics", str(tmp_path / "out"), str(tmp_path / "s0"),
                 str(tmp_path / "s1")]) == 0
    captured = capsys.readouterr()
    assert "2 added" in captured.out and "device" in captured.err
    with PredictionCache(tmp_path / "out") as cache:
        assert len(cache.numerics_notes()[fingerprint]) == 2


def test_cache_merge_warns_when_only_the_shape_of_the_work_differs(tmp_path):
    fingerprint = "b" * 64
    store(tmp_path / "s0", fingerprint, HF, [[0.25, 0.75]])
    store(tmp_path / "s1", fingerprint, dict(HF, threads=1), [[0.25, 0.75]])
    warnings = []
    counts = merge_caches(tmp_path / "out", [tmp_path / "s0", tmp_path / "s1"], warnings=warnings)
    assert counts["added"] == 1 and len(warnings) == 1 and "threads: 2 vs 1" in warnings[0]


def part(branches, **flags):
    return {"exact_sum": {"trec": {"passes": [dict({"branch": b}, **flags) for b in branches]}}}


def test_the_run_record_lists_branches_and_flags():
    record = numerics_record(ReferenceBackend("lexical"), shards={"launcher": "ray", "count": 2, "unit": "query"},
                             parts={"Normal": part(["softmax"], rounding=True), "GLER": part(["as given", "softmax"])})
    assert record["route"] == {"kind": "shards", "launcher": "ray", "count": 2, "unit": "query"}
    assert record["exact_sum"] == {"branches": {"Normal": {"trec": ["softmax"]},
                                                "GLER": {"trec": ["as given", "softmax"]}},
                                   "rounding": ["Normal/trec"], "loglikelihoods": []}
    assert numerics_record(ReferenceBackend("lexical"))["route"] == {"kind": "one process"}


def test_comparison_notes_name_mixed_branches_log_likelihoods_and_rounding_of_one_model():
    def provenance(parts, answers=HF, fingerprint="f"):
        return {"model": {"fingerprint": fingerprint},
                "numerics": {"answers": answers, "exact_sum": exact_sum_record(parts)}}
    same = provenance({"Normal": part(["softmax"])})
    assert comparison_notes(same, same, "a vs b") == []
    mixed = comparison_notes(same, provenance({"Normal": part(["as given"])}), "a vs b")
    assert len(mixed) == 1 and "as given in one run and softmaxed them again" in mixed[0] and "Normal/trec" in mixed[0]
    logs = comparison_notes(same, provenance({"Normal": part(["softmax"], loglikelihoods=True)}), "a vs b")
    assert len(logs) == 1 and "look like log-likelihoods" in logs[0]
    threads = comparison_notes(same, provenance({"Normal": part(["softmax"])}, dict(HF, threads=1)), "a vs b")
    assert len(threads) == 1 and "same model" in threads[0] and "threads: 2 vs 1" in threads[0]
    other_model = provenance({"Normal": part(["softmax"])}, dict(HF, threads=1), fingerprint="g")
    assert comparison_notes(same, other_model, "a vs b") == []  # two models: settings are not the difference
