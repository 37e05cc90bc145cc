"""Unfinished thinking sections are said on screen with their counts, beside the UNPARSED line."""
from StaICC.report.notices import notices


def _metadata(thinking):
    return {"unparsed_answers": {"a": 7, "b": 2}, "answer_counts": {"a": 10, "b": 10}, "thinking": thinking}


def test_unfinished_and_over_budget_sections_are_counted_in_one_line():
    lines = notices([_metadata({"a": {"answers": 10, "unfinished": 6, "over_budget": 1, "chars": 5, "tokens": None,
                                      "counted": 0},
                                "b": {"answers": 4, "unfinished": 2, "over_budget": 0, "chars": 1, "tokens": 3,
                                      "counted": 4}})])
    assert lines[0].startswith("UNPARSED: 9 of 20 generated answers")
    assert lines[1] == ("THINKING: of 14 answers with a thinking section, 8 never closed their thinking section and "
                        "1 thought past thinking_budget; such an answer is unparsed whatever label it names "
                        "(counted in UNPARSED)")


def test_finished_sections_and_runs_without_thinking_add_no_line():
    finished = {"a": {"answers": 10, "unfinished": 0, "over_budget": 0, "chars": 5, "tokens": 9, "counted": 10}}
    assert not any(line.startswith("THINKING") for line in notices([_metadata(finished)]))
    assert not any(line.startswith("THINKING") for line in notices([_metadata(None), {"thinking": "damaged"}]))
