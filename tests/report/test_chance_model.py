"""``--model uniform`` is chance: a drawn label per prompt, not label 0 from an argmax tie."""
from collections import Counter

from StaICC.metrics import argmax
from StaICC.backends.reference_model import CHANCE_TILT, REFERENCE_MODELS, chance


def test_chance_draws_every_label_and_stays_near_uniform():
    labels = ["a", "b", "c", "d", "e", "f"]
    rows = [chance(f"prompt {i}", labels) for i in range(600)]
    counts = Counter(argmax(r) for r in rows)
    assert set(counts) == set(range(6)) and min(counts.values()) > 60  # about 100 each
    assert all(abs(sum(r) - 1) < 1e-12 and abs(max(r) - min(r) - CHANCE_TILT) < 1e-15 for r in rows)
    assert chance("same prompt", labels) == chance("same prompt", labels)
    assert argmax(chance(["p a", "p b"], labels[:2])) in (0, 1)  # noisy-channel prompt lists too


def test_uniform_backend_is_chance_on_trec():
    from StaICC.backends.registry import make_backend
    from StaICC.subbenchmarks.builtin import Normal
    assert REFERENCE_MODELS["uniform"] is chance
    result = Normal(datasets=["TREC"])(make_backend("uniform"))
    accuracy = result["Divided results"]["TREC"]["accuracy"]
    assert 0.10 < accuracy < 0.25  # chance is 1/6; label 0 alone gave 0.0098
