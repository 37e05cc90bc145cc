"""Property test: any ``staicc run`` arguments give a clean run or one error line with exit status 2."""
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cli_strategies import VALUES  # noqa: E402
from StaICC.cli import main  # noqa: E402

FLAGS = st.sampled_from(["--model", "--model-args", "--benchmarks", "--k", "--limit", "--batch-size", "--retriever",
                         "--output-dir", "--cache", "--noisy-channel", "--log-samples", "--no-progress", "--bogus"])
SWITCHES = {"--noisy-channel", "--log-samples", "--no-progress"}


@st.composite
def arguments(draw):
    args = []
    for flag in draw(st.lists(FLAGS, max_size=5)):
        args.append(flag)
        if flag not in SWITCHES:
            args.append(draw(VALUES))
    return args


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments())
@example(["--model", "", "--bogus", "\x1e0"])  # str.splitlines() breaks at \x1e: escaped in the error line
@example(["--benchmarks", "a\u2028b\nc"])
def test_run_arguments_never_crash(tmp_path_factory, args):
    # Every example is a dry run on one dataset: checks and planning only, never inference.
    import contextlib
    import io
    import os
    err, out = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cli"))  # relative --cache / --output-dir paths land in a scratch folder
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(["run", *args, "--dry-run", "--datasets", "TREC"])
    finally:
        os.chdir(here)
    lines = err.getvalue().strip().splitlines()
    assert code in (0, 2), (args, err.getvalue())
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("staicc: error: "), (args, err.getvalue())
    else:
        assert "distinct" in out.getvalue()
