"""The validation vocabulary: constraints as data, one message form, and no inline number checks elsewhere.

Each constraint's refusal is checked word for word (``{name} must be {expected}{at}, got {given}``) with the
classes a caller catches; the checks folded into the vocabulary keep their messages (the old texts are written
out here); an AST scan of the package refuses a new inline ``isinstance(x, int)``-style check that raises.
"""
import argparse
import ast
import fractions
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from StaICC.errors import (InvalidParameterError, InvalidTypeError, InvalidValueError, StaICCError, error_name,
                           where)
from StaICC.validation import (Boolean, Integer, Location, Options, Real, argument_type, check, check_int, check_real,
                               in_file)

ROOT = Path(__file__).resolve().parent.parent


def refusal(value, constraint, location) -> Tuple[type, str]:
    with pytest.raises(StaICCError) as info:
        check(value, constraint, location)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("value, constraint, location, expected", [
    ("3", Integer(), Location("k", " in BM25Retriever"), "k must be an int in BM25Retriever, got str '3'"),
    (True, Integer(), "k", "k must be an int, got bool True"),
    (2.0, Integer(0), "k", "k must be an int, got float 2.0"),
    ("x", Real(), "k1", "k1 must be a real number, got str 'x'"),
    (None, Boolean(), Location("balanced", " in BM25Retriever"), "balanced must be True or False in BM25Retriever, got NoneType None"),
    (1, Boolean(), "flag", "flag must be True or False, got int 1"),
    ("3", Integer(1, text="a positive integer"), "count", "count must be a positive integer, got '3'"),
])
def test_a_refused_type_is_a_type_and_a_value_error_in_the_one_form(value, constraint, location, expected):
    kind, message = refusal(value, constraint, location)
    assert kind is InvalidParameterError and message == expected
    assert issubclass(kind, TypeError) and issubclass(kind, ValueError)
    assert issubclass(kind, InvalidTypeError) and issubclass(kind, InvalidValueError)


@pytest.mark.parametrize("value, constraint, location, expected", [
    (-1, Integer(0), Location("ice_num", " in RandomRetriever"), "ice_num must be >= 0 in RandomRetriever, got -1"),
    (11, Integer(0, 10), "n", "n must be <= 10, got 11"),
    (0, Integer(1, text="a positive integer"), "--limit", "--limit must be a positive integer, got 0"),
    (0.0, Real(0, closed="neither"), "t", "t must be > 0, got 0.0"),
    (1, Real(0, 1, closed="left"), "p", "p must be < 1, got 1"),
    (-1, Real(0), "l2", "l2 must be >= 0, got -1"),
    (float("nan"), Real(finite=False), "x", "x must be a finite number, got nan"),
    (float("inf"), Real(), "x", "x must be a finite number, got inf"),
    (10 ** 400, Real(), "x", "x must be a number a float can hold, got an int of 401 digits"),
    (2, Real(0, 1, text="a number in [0, 1]"), "p", "p must be a number in [0, 1], got 2"),
    ("mean", Options(("sum", "max")), "how", "how must be one of 'sum', 'max', got 'mean'"),
    (1, Options(("auto", True, False), text="'auto', True or False"), "share",
     "share must be 'auto', True or False, got 1"),
])
def test_a_refused_value_is_a_value_error_in_the_one_form(value, constraint, location, expected):
    kind, message = refusal(value, constraint, location)
    assert kind is InvalidValueError and message == expected
    assert not issubclass(kind, TypeError)


def test_the_location_names_a_dataset_query_file_and_row():
    at = where("SST2", 7)
    assert refusal(-2, Integer(0), Location("k", at))[1] == "k must be >= 0 at dataset 'SST2', query 7, got -2"
    assert refusal("x", Real(), Location("field 'score'", in_file("runs/a.jsonl", 4)))[1] == \
        "field 'score' must be a real number in runs/a.jsonl, row 4, got str 'x'"
    assert in_file("a.toml") == " in a.toml"


def test_accepted_values_come_back_converted():
    numpy = pytest.importorskip("numpy")
    value = check(numpy.int64(5), Integer(0), "n")
    assert value == 5 and type(value) is int
    assert type(check(numpy.float32(0.5), Real(0, 1), "p")) is float
    assert check(fractions.Fraction(1, 4), Real(0, 1), "p") == 0.25
    assert check(float("inf"), Real(0, finite=False), "timeout") == float("inf")
    assert check(True, Boolean(), "flag") is True and check(True, Options((True, False)), "flag") is True
    # a NumPy number out of range shows as the number, not as its repr
    assert refusal(numpy.int64(-3), Integer(0), "n")[1] == "n must be >= 0, got -3"


def test_bool_is_never_a_number_nor_a_number_a_bool():
    for constraint in (Integer(), Real(), Integer(0, 1), Real(0, 1)):
        assert refusal(True, constraint, "x")[0] is InvalidParameterError
    assert refusal(1, Options((True, False)), "x")[0] is InvalidValueError
    assert refusal(True, Options((0, 1)), "x")[0] is InvalidValueError
    assert check(1, Options((0, 1)), "x") == 1


def test_a_constraint_refuses_a_bound_kind_it_does_not_know():
    with pytest.raises(InvalidValueError, match="closed must be one of 'both', 'left', 'right', 'neither', got 'open'"):
        Real(0, 1, closed="open")


def test_a_refused_type_reads_as_typeerror_where_a_message_names_the_caught_class():
    assert error_name(InvalidParameterError("x")) == "TypeError"
    assert error_name(InvalidValueError("x")) == "ValueError"


def test_the_helpers_are_the_vocabulary_with_their_messages():
    with pytest.raises(InvalidParameterError, match=r"^fix_id_list\[2\] must be an int in FixKRetriever, got str '3'$"):
        check_int("3", "fix_id_list[2]", at=" in FixKRetriever")
    with pytest.raises(InvalidValueError, match=r"^ice_num must be >= 0 in RandomRetriever, got -2$"):
        check_int(-2, "ice_num", minimum=0, at=" in RandomRetriever")
    with pytest.raises(InvalidValueError, match=r"^the label wrong rate must be <= 1, got 1.5$"):
        check_real(1.5, "the label wrong rate", minimum=0, maximum=1)


def parse(constraint, text: str):
    parser = argparse.ArgumentParser(prog="p", exit_on_error=False)
    parser.add_argument("--n", type=argument_type(constraint))
    return parser.parse_args(["--n", text]).n


@pytest.mark.parametrize("constraint, text, message", [
    (Integer(1, text="a positive integer"), "x", "expected a positive integer, got 'x'"),
    (Integer(1, text="a positive integer"), "0", "expected a positive integer, got 0"),
    (Integer(text="an integer"), "1.5", "expected an integer, got '1.5'"),
    (Real(0, 1, closed="neither", kind="a number between 0 and 1", text="a number strictly between 0 and 1"), "x",
     "expected a number between 0 and 1, got 'x'"),
    (Real(0, 1, closed="neither", kind="a number between 0 and 1", text="a number strictly between 0 and 1"), "1",
     "expected a number strictly between 0 and 1, got 1.0"),
    (Integer(0, text="a number of rows (0: all)"), "-1", "expected a number of rows (0: all), got -1"),
])
def test_an_argparse_type_refuses_in_one_line(constraint, text, message):
    with pytest.raises(argparse.ArgumentError) as info:
        parse(constraint, text)
    assert str(info.value) == f"argument --n: {message}"


def test_an_argparse_type_accepts_and_converts():
    assert parse(Integer(1), " 7") == 7 and parse(Real(0, 1), "0.25") == 0.25


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "StaICC", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize("args, line", [
    (["compare", "a", "b", "--resamples", "0"], "argument --resamples: expected a positive integer, got 0"),
    (["compare", "a", "b", "--level", "1"], "argument --level: expected a number strictly between 0 and 1, got 1.0"),
    (["compare", "a", "b", "--seed", "x"], "argument --seed: expected an integer, got 'x'"),
    (["verify", "nowhere", "--tolerance", "-1"], "--tolerance must be a non-negative number, got -1.0"),
    (["verify", "nowhere", "--audit", "-1"], "--audit must be a non-negative integer, got -1"),
])
def test_the_cli_refuses_a_number_in_one_line_with_exit_status_2(args, line):
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.strip().endswith(line), done.stderr


def test_export_and_tasks_refuse_a_number_as_before(tmp_path):
    (tmp_path / "results.json").write_text("{}", encoding="utf-8")
    export = ["export", str(tmp_path), "--format", "eee", "-o", str(tmp_path / "out")]
    for args, line in ((export + ["--resamples", "0"], "export: --resamples must be between 1 and 1000000, got 0"),
                       (export + ["--level", "nan"], "export: --level must be strictly between 0 and 1, got nan"),
                       (["tasks", "validate", "TREC", "--k", "-1"], "--k must be >= 0, got -1")):
        done = run_cli(*args)
        assert done.returncode == 2 and done.stderr == f"staicc: error: {line}\n", done.stderr


def folded_messages():
    """Checks folded into the vocabulary, each with the exact message it raised before."""
    from StaICC.cache import PredictionCache
    from StaICC.engine.selection import Shard
    from StaICC.methods.calibration.prototypical import prototypical_calibration
    from StaICC.methods.calibration.surprise import surprise_calibration
    from StaICC.sampling.lite import LiteSample
    from StaICC.sampling.subsets import check_fraction, pick_test_items, stratified_order
    from StaICC.retrieval import MMRRetriever
    from StaICC.stats.bootstrap import _check_options
    from StaICC.stats.lite_until import check_halfwidth
    from StaICC.stats.significance import mcnemar_exact
    from StaICC.stats.vectorized import numpy_module
    from StaICC.methods.fitted import _fitted_on_pass
    return [
        (lambda: numpy_module("gpu"), "engine must be one of auto, python, numpy, got 'gpu'"),
        (lambda: _fitted_on_pass("m", "d", object, 10, "nope", 5),
         "method 'm': calibration must be one of crossfit, prompts, got 'nope'"),
        (lambda: MMRRetriever(candidates=0),
         "candidates must be at least 1 (or None for max(4k, 50)) in MMRRetriever, got 0"),
        (lambda: MMRRetriever(candidates=2.0), "candidates must be an int in MMRRetriever, got float 2.0"),
        (lambda: _check_options(10, 1.5, 0), "level must be strictly between 0 and 1, got 1.5"),
        (lambda: _check_options(10, "x", 0), "level must be a real number, got str 'x'"),
        (lambda: surprise_calibration(["a", "b"], l2=-1), "l2 in surprise_calibration must be a number >= 0, got -1"),
        (lambda: surprise_calibration(["a", "b"], l2="x"), "l2 in surprise_calibration must be a number >= 0, got 'x'"),
        (lambda: surprise_calibration(["a", "b"], decays=(0.5, 2)),
         "decays in surprise_calibration must be numbers in [0, 1], got (0.5, 2)"),
        (lambda: prototypical_calibration(["a", "b"], reg_covar=1),
         "reg_covar in prototypical_calibration must be a number in (0, 1), got 1"),
        (lambda: LiteSample(items=0), "the number of test items of a lite run must be a positive integer, got 0"),
        (lambda: LiteSample(items=True), "the number of test items of a lite run must be a positive integer, got True"),
        (lambda: check_fraction(1.5), "the fraction of test items must be a number in (0, 1], got 1.5"),
        (lambda: pick_test_items(4, ("x",), count=0), "count must be a positive integer, got 0"),
        (lambda: stratified_order(-1, ("x",)), "the number of test items must be >= 0, got -1"),
        (lambda: mcnemar_exact(-1, 3), "McNemar counts must be non-negative ints: b = -1"),
        (lambda: mcnemar_exact(2, 1.0), "McNemar counts must be non-negative ints: c = 1.0"),
        (lambda: check_halfwidth(0), "the target half-width must be a finite number > 0, e.g. 0.02; got 0"),
        (lambda: PredictionCache("unused.sqlite", timeout=0), "timeout must be a positive number of seconds, got 0"),
        (lambda: Shard(0, 2, unit="row"), "the shard unit must be one of query, call, got 'row'"),
    ]


def test_folded_checks_keep_their_messages():
    pytest.importorskip("numpy")
    for make, message in folded_messages():
        with pytest.raises(ValueError) as info:
            make()
        assert str(info.value) == message


def test_checks_that_had_their_own_wording_now_read_in_the_one_form():
    from StaICC.metrics.calibration_metrics import classwise_ece, selective_accuracy
    for make, kind, message in (
            (lambda: classwise_ece([0], [[0.5, 0.5]], bins=0), InvalidValueError, "bins must be >= 1, got 0"),
            (lambda: classwise_ece([0], [[0.5, 0.5]], bins="3"), InvalidParameterError,
             "bins must be an int, got str '3'"),
            (lambda: classwise_ece([0], [[0.5, 0.5]], bins=True), InvalidParameterError,
             "bins must be an int, got bool True"),  # decided: a bool is no longer taken as 1 bin
            (lambda: selective_accuracy([0], [[0.5, 0.5]], coverage=0), InvalidValueError, "coverage must be > 0, got 0"),
            (lambda: selective_accuracy([0], [[0.5, 0.5]], coverage=1.5), InvalidValueError,
             "coverage must be <= 1, got 1.5")):
        with pytest.raises(kind) as info:
            make()
        assert str(info.value) == message


def test_folded_checks_accept_numpy_numbers_as_numbers():
    """Deliberate (docs/differences.md): where an inline check took only int and float, the vocabulary also
    takes NumPy numbers and fractions, as check_int/check_real always did, converted to Python's."""
    numpy = pytest.importorskip("numpy")
    from StaICC.methods.calibration.surprise import surprise_calibration
    from StaICC.sampling.lite import LiteSample
    assert surprise_calibration(["a", "b"], l2=numpy.float32(0.5)).l2 == 0.5
    items = LiteSample(items=numpy.int64(3)).items
    assert items == 3 and type(items) is int


# --- no inline number checks outside the vocabulary -----------------------------------------------------------

#: isinstance targets that make a check a number check (bool alone is a flag's check; a tuple with another type,
#: ``(int, str)``, is a dispatch on kinds of ids or labels)
NUMBER_TYPES = frozenset(("int", "float", "complex", "bool", "Integral", "Real", "Rational", "Number"))
#: the original API keeps the original's own checks; validation.py is the vocabulary
EXEMPT_PATHS = ("StaICC/validation.py", "StaICC/legacy/", "StaICC/util/", "StaICC/normal.py", "StaICC/diagnosis.py",
                "StaICC/prefabricate_inference/", "StaICC/cached_dataset/")
#: (path, function): why that check stays inline
ALLOWED = {
    ("StaICC/backends/generative.py", "index_of"):
        "a user hook's answer kept as returned: only a Python int may reach the JSON records (a NumPy one would not "
        "serialize)",
    ("StaICC/tasks/task.py", "_evaluator_keys"):
        "a task's score() answer kept as returned: only Python numbers may reach the results JSON",
    ("StaICC/cache/codec.py", "_check_scores"):
        "the cache packs Python ints and floats by type; a NumPy score would pack differently",
    ("StaICC/methods/calibration/base.py", "_element"):
        "a shape test (a bare number where a (probs, state) tuple belongs), not a check of a number",
}


def _type_names(node: ast.expr) -> List[str]:
    elements = node.elts if isinstance(node, ast.Tuple) else [node]
    return [e.id if isinstance(e, ast.Name) else e.attr if isinstance(e, ast.Attribute) else "?" for e in elements]


def _is_number_isinstance(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2):
        return False
    names = set(_type_names(node.args[1]))
    return names <= NUMBER_TYPES and bool(names - {"bool"})


def inline_number_checks(path: str, source: str) -> List[Tuple[str, str, int]]:
    """``(path, function, line)`` of each ``if`` that tests a value with ``isinstance`` against number types
    and raises: a type-and-range check written by hand instead of :func:`StaICC.validation.check`."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.If) and any(isinstance(s, ast.Raise) for s in child.body) and \
                    any(_is_number_isinstance(n) for n in ast.walk(child.test)):
                found.append((path, name, child.lineno))
            visit(child, name)
    visit(ast.parse(source), "")
    return found


def package_checks() -> List[Tuple[str, str, int]]:
    found = []
    for file in sorted((ROOT / "StaICC").rglob("*.py")):
        path = file.relative_to(ROOT).as_posix()
        if not path.startswith(EXEMPT_PATHS):
            found += inline_number_checks(path, file.read_text(encoding="utf-8"))
    return found


def test_no_inline_number_check_outside_the_vocabulary():
    stray = [f"{path}:{line} in {function}()" for path, function, line in package_checks()
             if (path, function) not in ALLOWED]
    assert not stray, "check numbers with StaICC.validation.check (or is_int/is_real): " + ", ".join(stray)


def test_every_allowed_check_still_exists():
    present = {(path, function) for path, function, _ in package_checks()}
    assert set(ALLOWED) <= present, sorted(set(ALLOWED) - present)


@pytest.mark.parametrize("source, count", [
    ("def f(n):\n    if isinstance(n, bool) or not isinstance(n, int) or n < 0:\n        raise ValueError(n)\n", 1),
    ("def f(x):\n    if not isinstance(x, (int, float)):\n        raise TypeError(x)\n", 1),
    ("import numbers\ndef f(x):\n    if not isinstance(x, numbers.Real):\n        raise TypeError(x)\n", 1),
    ("def f(x):\n    if isinstance(x, bool):\n        raise TypeError(x)\n", 0),
    ("def f(x):\n    if not isinstance(x, (int, str)):\n        raise TypeError(x)\n", 0),
    ("def f(x):\n    if isinstance(x, int):\n        return x\n", 0),
])
def test_the_scan_finds_a_hand_written_number_check(source, count):
    assert len(inline_number_checks("StaICC/new.py", source)) == count


def test_a_compact_samples_file_counting_with_true_is_refused(tmp_path):
    """Decided with the fold: the compact file's 'count' took a JSON true as 1 (isinstance(True, int)); a bool is
    never a count, so the file is refused as malformed like any other non-integer count."""
    import json
    from StaICC.errors import RunFormatError
    from StaICC.results.columns import COLUMNS_FORMAT, read_columns
    path = tmp_path / "samples.columns.json"
    for count in (True, 1.0, "1"):
        path.write_text(json.dumps({"format": COLUMNS_FORMAT, "parts": [{"count": count, "width": 2, "columns": {}}]}))
        with pytest.raises(RunFormatError, match="'count' and 'width' must be positive integers"):
            read_columns(str(path))
