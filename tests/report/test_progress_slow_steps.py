"""Off a terminal, a step still running SLOW_STEP_S after it began is announced; a quick one is not."""
import io
import time

from StaICC.report import progress
from StaICC.report.progress import StatusLine


def test_the_slow_step_threshold_is_two_seconds():
    assert progress.SLOW_STEP_S == 2.0


def test_off_a_terminal_only_slow_steps_are_announced(monkeypatch):
    monkeypatch.setattr(progress, "SLOW_STEP_S", 0.2)
    stream = io.StringIO()
    with StatusLine("staicc compare", None, stream) as status:
        status("reading run 1 of 2: A")      # replaced at once: never announced
        status("resampling Normal of A")     # still running 0.2 s later: announced
        time.sleep(0.6)
        status("resampling GLER of A")       # the command ends at once: never announced
    time.sleep(0.4)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("staicc compare: resampling Normal of A (")
    assert "\r" not in stream.getvalue()


def test_asked_for_every_step_and_silenced_for_none(monkeypatch):
    monkeypatch.setattr(progress, "SLOW_STEP_S", 0.1)
    shown, silent = io.StringIO(), io.StringIO()
    for stream, enabled in ((shown, True), (silent, False)):
        with StatusLine("staicc report", enabled, stream) as status:
            status("one")
            status("two")
            time.sleep(0.3)
    assert [line.split(" (")[0] for line in shown.getvalue().splitlines()] == ["staicc report: one",
                                                                                "staicc report: two"]
    assert silent.getvalue() == ""
