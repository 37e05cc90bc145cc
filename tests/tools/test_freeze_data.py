"""tools/freeze_data.py: the restricted unpickler bounds size and depth, and never stalls.

The hostile pickles are built here, in the test, with the pickle module; StaICC itself never
imports pickle.
"""
import pickle
import time

import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def freeze():
    return load_script("tools/freeze_data.py")


def test_a_good_table_loads(freeze):
    table = [(["a text", "second"], 0), (["another"], 1)]
    for protocol in (0, 2, 4, 5):
        assert freeze.restricted_load(pickle.dumps(table, protocol=protocol), "t") == table


def test_self_referencing_lists_fail_fast_without_repr(freeze):
    shared = []
    shared.append(shared)
    for _ in range(30):  # each level references the one below twice: repr would be 2**30 long
        shared = [shared, shared]
    blob = pickle.dumps([shared], protocol=4)
    assert len(blob) < 400
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"t: row 0 is not \(\[str, \.\.\.\], int\): got list of length 2"):
        freeze.restricted_load(blob, "t")
    assert time.perf_counter() - started < 0.5


def test_deep_nesting_is_refused_before_loading(freeze):
    depth = 200_000
    blob = b"\x80\x04" + b"]" * depth + b"a" * (depth - 1) + b"."  # EMPTY_LIST x n, APPEND x n-1: [[[...]]]
    with pytest.raises(ValueError, match=r"t: the pickle nests deeper than 10000 levels"):
        freeze.restricted_load(blob, "t")


def test_deep_marks_are_refused(freeze):
    blob = b"\x80\x04" + b"(" * 100 + b"."
    with pytest.raises(ValueError, match="opens more than 64 MARKs"):
        freeze.restricted_load(blob, "t")


def test_size_is_bounded(freeze, monkeypatch):
    monkeypatch.setattr(freeze, "MAX_PICKLE_BYTES", 100)
    blob = pickle.dumps([(["x" * 200], 0)], protocol=4)
    with pytest.raises(ValueError, match=rf"t: the pickle has {len(blob)} bytes, more than the 100 accepted"):
        freeze.restricted_load(blob, "t")


@pytest.mark.parametrize("blob, match", [
    (pickle.dumps(print, protocol=4), "refused pickle opcode STACK_GLOBAL"),
    (b"\x80\x04]", "malformed pickle"),                 # no STOP
    (b"\x80\x04a.", "stack underflow"),                  # APPEND on an empty stack
    (b"\x80\x04e.", "without MARK"),                     # APPENDS without MARK
    (pickle.dumps((["a"], 0), protocol=4), "expected a list of rows, got tuple of length 2"),
    (pickle.dumps([(["a"], "0")], protocol=4), r"row 0 is not .*holding \(list of length 1, str of length 1\)"),
])
def test_malformed_pickles_get_clear_errors(freeze, blob, match):
    with pytest.raises(ValueError, match=match):
        freeze.restricted_load(blob, "t")


def test_write_pins_replaces_only_the_constants(freeze, tmp_path):
    path = tmp_path / "pins.py"
    path.write_text('"""doc"""\nMANIFEST_SHA256 = "old"\nCONSTANTS_SHA256 = "old"\n', encoding="utf-8")
    freeze.write_pins({"MANIFEST_SHA256": "a" * 64, "CONSTANTS_SHA256": "b" * 64}, str(path))
    assert path.read_text(encoding="utf-8") == f'"""doc"""\nMANIFEST_SHA256 = "{"a" * 64}"\nCONSTANTS_SHA256 = "{"b" * 64}"\n'
