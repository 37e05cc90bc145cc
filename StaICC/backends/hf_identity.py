"""What identifies an ``hf`` model in its fingerprint: its files, every tensor, its tokenizer.

The cache and provenance trust these digests to tell two models apart: a model directory is
hashed by its config and index files and, per safetensors file, its header and every tensor
(whole when small, by sampled blocks when large, every byte with ``full``); a model in memory
by every parameter and buffer.  What is and is not detected is in docs/security.md.
"""
import hashlib
import json
import os
from typing import Any, List, Optional, Tuple

from ..errors import InvalidValueError

_CONFIG_FILES = ("config.json", "generation_config.json", "model.safetensors.index.json",
                 "pytorch_model.bin.index.json")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                    "vocab.json", "merges.txt", "added_tokens.json", "chat_template.jinja", "chat_template.json")


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_digest(directory: str, *, full: bool = False) -> str:
    """SHA-256 over the config/index files and every tensor of every weight file.

    A safetensors file contributes its header (every tensor's name, dtype, shape and
    offsets) and, per tensor, either all its bytes (tensors up to
    :data:`WHOLE_TENSOR_BYTES`, and every tensor with ``full=True``) or
    :data:`TENSOR_SAMPLES` blocks of :data:`SAMPLED_BLOCK_BYTES` spread over it, its
    first and last bytes included.  So no tensor can be changed as a whole (retrained,
    scaled, merged with a LoRA) without changing the digest; what a sampled digest can
    miss is an edit confined to bytes between the sampled blocks of one large tensor.
    Other weight formats (``.bin``, ``.pt``, ``.gguf``) are hashed whole.
    """
    digest = hashlib.sha256()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name in _CONFIG_FILES:
            digest.update(f"{name}:{_file_digest(path)}\n".encode())
        elif name.endswith(".safetensors"):
            digest.update(f"{name}:{os.path.getsize(path)}:".encode() + _safetensors_digest(path, full))
        elif name.endswith((".bin", ".pt", ".pth", ".gguf")):
            digest.update(f"{name}:{_file_digest(path)}\n".encode())
    return digest.hexdigest()


#: per-tensor sampling of :func:`weights_digest`: tensors this small are hashed whole, larger
#: ones by this many blocks of this size (about 1 MiB read per 64 tensors)
WHOLE_TENSOR_BYTES, TENSOR_SAMPLES, SAMPLED_BLOCK_BYTES = 64 << 10, 4, 4096
#: a safetensors header longer than this is refused (real ones are well under a few MiB)
MAX_HEADER_BYTES = 100 << 20


def _safetensors_digest(path: str, full: bool) -> bytes:
    size = os.path.getsize(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        header_length = int.from_bytes(handle.read(8), "little")
        if size < 8 or not 0 < header_length <= min(MAX_HEADER_BYTES, size - 8):
            raise InvalidValueError(f"{path} is not a safetensors file (header length {header_length}, file size {size})")
        header_bytes = handle.read(header_length)
        digest.update(header_bytes)
        try:
            header = json.loads(header_bytes)
        except ValueError:
            raise InvalidValueError(f"{path} has a damaged safetensors header (not JSON)") from None
        base = 8 + header_length
        for name in sorted(k for k in header if k != "__metadata__"):
            entry = header[name]
            begin, end = entry["data_offsets"] if isinstance(entry, dict) else (0, 0)
            digest.update(name.encode("utf-8") + b"\x00")
            for position, length in _tensor_blocks(int(begin), int(end), full):
                handle.seek(base + position)
                digest.update(handle.read(length))
    return digest.digest()


def _tensor_blocks(begin: int, end: int, full: bool) -> List[Tuple[int, int]]:
    """(offset, length) of the byte ranges of one tensor that the digest reads."""
    length = end - begin
    if full or length <= WHOLE_TENSOR_BYTES:
        return [(begin + k, min(1 << 24, end - begin - k)) for k in range(0, max(length, 0), 1 << 24)]
    last = length - SAMPLED_BLOCK_BYTES
    return [(begin + last * i // (TENSOR_SAMPLES - 1), SAMPLED_BLOCK_BYTES) for i in range(TENSOR_SAMPLES)]


def tokenizer_digest(tokenizer: Any, directory: Optional[str] = None) -> str:
    """SHA-256 of the tokenizer files in ``directory``, or of the in-memory tokenizer's serialisation."""
    digest = hashlib.sha256()
    found = False
    if directory is not None and os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if name in _TOKENIZER_FILES:
                digest.update(f"{name}:{_file_digest(os.path.join(directory, name))}\n".encode())
                found = True
    if not found:
        backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
        if backend is not None and hasattr(backend, "to_str"):
            digest.update(backend.to_str().encode())
        else:
            digest.update(json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False).encode())
        digest.update(str(getattr(tokenizer, "chat_template", None)).encode())
    return digest.hexdigest()


def in_memory_digest(model: Any) -> str:
    """Config plus every parameter and buffer, by name, dtype, shape and all their bytes.

    An in-memory model has no file to sample, and two models can share their first and
    last tensors (a LoRA merged into a base), so all of them are read: about the cost of
    one copy of the weights to the CPU.  Give ``model_id`` to skip it.
    """
    digest = hashlib.sha256(model.config.to_json_string(use_diff=False).encode())
    named = list(model.named_parameters()) + list(model.named_buffers())
    for name, tensor in named:
        data = tensor.detach()
        digest.update(f"{name}:{str(data.dtype)}:{tuple(data.shape)}\n".encode())
        if data.numel():
            raw = data.contiguous().reshape(-1).view(_uint8()).cpu().numpy()
            digest.update(memoryview(raw))
    return digest.hexdigest()


def _uint8() -> Any:
    from ..extras import require
    return require("torch", "the hf backend").uint8
