"""``execute(config, observer=...)``: the one orchestration of a run tells its observer each step.

``staicc run`` prints through these events (``cli/run_output.Terminal``); a notebook's run tells nobody.
The events come in a fixed order, ``failed`` only when asking raised, and an error raised before
``asking`` reaches no ``failed``: it is the arguments'.
"""
import pytest

from StaICC.datasets import resolve_dataset
from StaICC.engine.selection import Nothing, QuerySubset
from StaICC.runs import RunConfig, execute
from StaICC.runs.observer import SILENT, Counting, RunObserver

ITEMS = 8


def config(**changes):
    base = {"model": "reference", "benchmarks": "Normal", "datasets": (resolve_dataset("TREC"),),
            "test_items": QuerySubset.first(ITEMS), "progress": False}
    return RunConfig(**{**base, **changes})


class Recorder(RunObserver):
    """Writes down every event with what it was shown."""

    def __init__(self):
        self.events = []

    def planned(self, prepared):
        self.events.append(("planned", prepared.backend.name, sorted(prepared.suite)))

    def asking(self, prepared, counting):
        self.events.append(("asking", counting))

    def failed(self, prepared, error):
        self.events.append(("failed", error))


def test_a_run_tells_its_observer_planned_then_asking_and_gives_the_silent_runs_numbers():
    seen = Recorder()
    run = execute(config(), observer=seen)
    assert seen.events == [("planned", "reference", ["Normal"]), ("asking", None)]
    silent = execute(config(), observer=SILENT)
    assert run.result["Normal"]["Averaged results"] == silent.result["Normal"]["Averaged results"]
    assert run.metadata["prompts"] == silent.metadata["prompts"] > 0


def test_a_failed_run_tells_the_observer_the_error_it_then_raises():
    def refusing(prompt, label_space):
        raise RuntimeError("the server went away")

    seen = Recorder()
    with pytest.raises(RuntimeError, match="the server went away") as raised:
        execute(config(model="function"), backend=refusing, observer=seen)
    assert [event[0] for event in seen.events] == ["planned", "asking", "failed"]
    assert seen.events[-1][1] is raised.value


def test_an_error_before_asking_is_not_the_runs_failure(tmp_path):
    foreign = tmp_path / "not-a-cache.sqlite"
    foreign.write_text("these are not SQLite pages\n" * 10)
    seen = Recorder()
    with pytest.raises(Exception) as raised:
        execute(config(cache=str(foreign)), observer=seen)
    assert isinstance(raised.value, (ValueError, OSError))
    assert seen.events == []  # refused while planning: nothing was planned, nothing asked, nothing failed


def test_a_dry_runs_measure_is_handed_to_the_observer_and_counts_the_planned_batches():
    batches = []

    def measure(backend, requests):
        batches.append(len(requests))

    seen = Recorder()
    run = execute(config(selection=Nothing()), measure=measure, observer=seen)
    (name, counting), = seen.events[1:]
    assert name == "asking" and isinstance(counting, Counting) and counting.counter is measure
    assert counting.shape is None
    assert sum(batches) == run.metadata["distinct_prompts"] > 0
    assert not run.summarised


def test_a_dry_run_of_a_backend_that_counts_nothing_has_no_counting():
    seen = Recorder()
    execute(config(selection=Nothing()), observer=seen)
    assert seen.events[1] == ("asking", None)
