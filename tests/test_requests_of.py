"""requests_of builds the same requests as Request(...) does, field for field and in every behaviour."""
import dataclasses

import pytest

from StaICC.requests import Request, requests_of


def test_requests_of_equals_the_constructor():
    prompts = ["a", "b", ("c", "d")]
    built = requests_of(prompts, ("x", "y"), "GLER", "sst2", 10, 2)
    direct = [Request(p, ("x", "y"), "GLER", "sst2", 10 + q, 2) for q, p in enumerate(prompts)]
    assert built == direct
    for a, b in zip(built, direct):
        assert type(a) is Request
        assert hash(a) == hash(b) and repr(a) == repr(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert vars(a) == vars(b) and list(vars(a)) == [f.name for f in dataclasses.fields(Request)]
        assert a.digests == b.digests and a.key() == b.key() and a.noisy_channel == b.noisy_channel
        assert dataclasses.replace(a, pass_index=0) == dataclasses.replace(b, pass_index=0)


def test_requests_of_carries_segments_outside_equality_and_stays_frozen():
    segments = [("", "x ", "1\n", "q "), None]
    built = requests_of(["x 1\nq ", "y"], ("1",), "Normal", "d", 0, 0, segments)
    assert [r.segments for r in built] == segments
    assert built[0] == Request("x 1\nq ", ("1",), "Normal", "d", 0, 0)  # segments are no part of equality
    with pytest.raises(dataclasses.FrozenInstanceError):
        built[0].prompt = "other"
    assert requests_of([], ("1",), "Normal", "d", 0, 0) == []
