"""Model identity you can trust: the hf weights digest covers every tensor of a saved
model, and an in-memory model's digest covers every parameter.  Real HF model classes
with tiny random weights, real safetensors files."""
import os
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backend_helpers import save_tiny, tiny_pair  # noqa: E402

from StaICC.backends.hf import in_memory_digest, weights_digest  # noqa: E402


def _rewrite(directory, change):
    """Load the saved tensors, apply ``change(name, tensor)`` to them, save them back."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(directory, "model.safetensors")
    tensors = load_file(path)
    for name in list(tensors):
        tensors[name] = change(name, tensors[name])
    save_file(tensors, path, metadata={"format": "pt"})


def test_scaling_any_single_tensor_changes_the_weights_digest(tmp_path):
    directory = save_tiny(str(tmp_path / "m"))
    from safetensors.torch import load_file
    names = sorted(load_file(os.path.join(directory, "model.safetensors")))
    _rewrite(directory, lambda _name, t: t.clone())  # the same values, saved again: the reference
    reference = weights_digest(directory)
    assert weights_digest(directory) == reference
    for target in names:  # the audit rewrote tensors x 1.5: each one alone must change the digest
        copy = str(tmp_path / f"copy-{target}")
        save_tiny(copy)
        _rewrite(copy, lambda name, t, target=target: t * 1.5 if name == target and t.is_floating_point() else t.clone())
        assert weights_digest(copy) != reference, target


def test_a_full_digest_reads_every_byte_of_a_large_tensor(tmp_path):
    """One value in the middle of a large tensor: the sampled digest may miss it, full does not."""
    directory = save_tiny(str(tmp_path / "m"))
    _rewrite(directory, lambda _name, t: t.clone())
    full = weights_digest(directory, full=True)

    def nudge(name, t):
        t = t.clone()
        if name.endswith("embed_tokens.weight"):
            t.view(-1)[t.numel() // 2 + 3] += 1.0
        return t
    _rewrite(directory, nudge)
    assert weights_digest(directory, full=True) != full


def test_the_in_memory_digest_covers_a_middle_parameter():
    import copy

    import torch
    model, _tokenizer = tiny_pair()
    before = in_memory_digest(model)
    # a copy is changed: changing tiny_pair's own model also changes every later tiny model
    # (transformers 5 reuses initialised weights), which would disturb other tests
    merged = copy.deepcopy(model)
    parameters = list(merged.parameters())
    assert len(parameters) > 2
    with torch.no_grad():
        parameters[len(parameters) // 2].mul_(1.5)  # neither the first nor the last tensor
    assert in_memory_digest(merged) != before
    assert in_memory_digest(model) == before
