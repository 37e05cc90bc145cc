#!/usr/bin/env python3
"""Regenerate StaICC's bundled data, reproducibly, from the public staicc==0.1.1 release.

What it does, in order:
1. takes the original wheel (``--wheel``) or downloads it with pip (build time only,
   the package never touches the network at run time);
2. reads each cached table with a *restricted* unpickler: the opcode stream is checked
   first and only opcodes that build lists, tuples, strings and ints are accepted;
   ``find_class`` refuses every global, so no code can run;
   the pickle's size and the depth of its stack are bounded, and the loaded table is
   checked without ever printing or recursing into it, so a small hostile pickle can
   neither stall nor exhaust the interpreter;
3. checks the pickle's SHA-256, the row count, the label histogram and the content hash
   (per row: inputs joined by U+001F, U+001F, label, U+001E) against ``datasets.json`` of
   the specification;
4. applies the standard triplet draw: the first C+D+T indexes of ``index_set(N, N)``
   from a fresh stream, and writes those rows, in draw order, as gzip JSON Lines
   ``[table_index, [inputs...], raw_label]`` (gzip mtime 0: byte-reproducible);
5. writes ``manifest.json`` (SHA-256 of each file, verified by the loader) and
   ``datasets.json`` (the per-dataset constants the package needs), prints their SHA-256
   and, when writing into StaICC/data, updates the hashes pinned in
   ``StaICC/datasets/pins.py``.

Usage:  python tools/freeze_data.py [--wheel StaICC-0.1.1-py3-none-any.whl] [--spec PATH]
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import pickle
import pickletools
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from StaICC.rng import fresh_stream  # noqa: E402
from StaICC.standard import standard_split_sizes  # noqa: E402

DATA_DIR = os.path.join(ROOT, "StaICC", "data")
DEFAULT_SPEC = os.path.join(ROOT, "..", "shared", "spec", "datasets.json")

ALLOWED_OPCODES = {
    "PROTO", "FRAME", "STOP", "MARK", "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
    "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE",
    "BININT", "BININT1", "BININT2", "INT", "LONG", "LONG1", "LONG4",
    "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET",
}
KEPT_FIELDS = (
    "index", "name", "task", "loader", "hf_source", "text_field", "label_field",
    "input_element_count", "raw_label_ids", "label_mapping", "label_space",
    "ground_truth_label_space", "reduced_label_space", "instruction", "input_text_prefixes",
    "input_text_affixes", "label_prefix", "label_affix", "query_prefix", "alternate_template",
    "split_sizes", "ppl_icl_instructions", "citation_url", "additional_citation_urls",
)


#: the largest cached table accepted (the biggest original, AGNews, is far smaller)
MAX_PICKLE_BYTES = 256 * 1024 * 1024
#: the most items the unpickler's stack may hold (a table needs about 1,000: one APPENDS batch)
MAX_STACK_HEIGHT = 10_000
#: the most MARKs open at once (a table needs 2 or 3)
MAX_MARK_DEPTH = 64


class _RefuseGlobals(pickle.Unpickler):
    def find_class(self, module, name):  # pragma: no cover - the opcode scan refuses first
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


class _Refused(ValueError):
    """A refusal of the opcode scan (other errors of pickletools are wrapped)."""


def _scan_opcodes(blob: bytes, label: str) -> None:
    """Refuse opcodes outside the allowed set, and stacks or MARK nesting beyond the bounds.

    The stack height is followed with each opcode's documented stack effect: a deeply
    nested structure needs a tall stack while it is built, so it is refused here, before
    anything is loaded.
    """
    height, marks = 0, []
    try:
        for opcode, _arg, position in pickletools.genops(blob):
            if opcode.name not in ALLOWED_OPCODES:
                raise _Refused(f"{label}: refused pickle opcode {opcode.name} at byte {position}")
            before, after = opcode.stack_before, opcode.stack_after
            if opcode.name == "MARK":
                marks.append(height)
                if len(marks) > MAX_MARK_DEPTH:
                    raise _Refused(f"{label}: the pickle opens more than {MAX_MARK_DEPTH} MARKs at once "
                                     f"(byte {position}); a table of rows needs 2 or 3")
                continue
            if pickletools.markobject in before:
                if not marks:
                    raise _Refused(f"{label}: malformed pickle, {opcode.name} without MARK at byte {position}")
                height = marks.pop() - before.index(pickletools.markobject)
            else:
                height -= len(before)
            if height < 0:
                raise _Refused(f"{label}: malformed pickle, stack underflow at byte {position}")
            height += len(after)
            if height > MAX_STACK_HEIGHT:
                raise _Refused(f"{label}: the pickle nests deeper than {MAX_STACK_HEIGHT} levels (byte {position}); "
                                 "a table of rows is 3 levels deep")
    except _Refused:
        raise
    except Exception as exc:  # pickletools reports truncated or invalid streams in several ways
        raise _Refused(f"{label}: malformed pickle ({type(exc).__name__}: {str(exc)[:200]})") from None


def _shape(value) -> str:
    """A short description of a value that never walks into it (no repr of hostile data)."""
    try:
        size = f" of length {len(value)}" if isinstance(value, (list, tuple, str)) else ""
    except Exception:  # pragma: no cover - len of builtin containers does not fail
        size = ""
    return f"{type(value).__name__}{size}"


def restricted_load(blob: bytes, label: str):
    """Unpickle data made only of lists, tuples, strings and ints; refuse anything else.

    Size and nesting are bounded before loading; the table's shape (a list of
    ``([str, ...], int)`` rows) is then checked row by row without recursion, and errors
    describe a bad row by its type and length only.
    """
    if not isinstance(blob, (bytes, bytearray)):
        raise TypeError(f"{label}: expected the pickle's bytes, got {type(blob).__name__}")
    if len(blob) > MAX_PICKLE_BYTES:
        raise ValueError(f"{label}: the pickle has {len(blob)} bytes, more than the {MAX_PICKLE_BYTES} accepted")
    _scan_opcodes(blob, label)
    try:
        table = _RefuseGlobals(io.BytesIO(blob)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, IndexError, KeyError) as exc:
        raise ValueError(f"{label}: malformed pickle ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(table, list):
        raise ValueError(f"{label}: expected a list of rows, got {_shape(table)}")
    for i, row in enumerate(table):
        ok = (isinstance(row, tuple) and len(row) == 2 and isinstance(row[0], list)
              and all(isinstance(t, str) for t in row[0]) and type(row[1]) is int)
        if not ok:
            parts = ", ".join(_shape(part) for part in row[:2]) if isinstance(row, tuple) else ""
            raise ValueError(f"{label}: row {i} is not ([str, ...], int): got {_shape(row)}"
                             + (f" holding ({parts})" if parts else ""))
    return table


def content_sha256(table) -> str:
    """Per row: the inputs joined by U+001F, then U+001F, the label, U+001E."""
    h = hashlib.sha256()
    for inputs, label in table:
        h.update(("\x1f".join(inputs) + "\x1f" + str(label) + "\x1e").encode("utf-8"))
    return h.hexdigest()


def gzip_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    return buf.getvalue()


def fetch_wheel(target_dir: str) -> str:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "staicc==0.1.1", "-d", target_dir], check=True)
    for name in os.listdir(target_dir):
        if name.lower().startswith("staicc-0.1.1") and name.endswith(".whl"):
            return os.path.join(target_dir, name)
    raise FileNotFoundError("pip did not produce the staicc 0.1.1 wheel")


def freeze(wheel: str, spec_path: str, out_dir: str) -> dict:
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    archive = zipfile.ZipFile(wheel)
    manifest = {"format": "staicc-bundled-v1", "source": "staicc==0.1.1 cached tables",
                "row_format": "[table_index, [input, ...], raw_label]", "files": {}}
    constants = []
    for ds in spec["datasets"]:
        name, cached = ds["name"], ds["cached_table"]
        blob = archive.read("StaICC/" + cached["resource_name"])
        if hashlib.sha256(blob).hexdigest() != cached["pickle_file_sha256"]:
            raise ValueError(f"{name}: pickle SHA-256 differs from the specification")
        table = restricted_load(blob, name)
        counts = [0] * len(cached["label_counts_by_raw_id"])
        for _inputs, label in table:
            counts[label] += 1
        if len(table) != cached["rows"] or counts != cached["label_counts_by_raw_id"]:
            raise ValueError(f"{name}: row count or label histogram differs from the specification")
        if content_sha256(table) != cached["content_sha256"]:
            raise ValueError(f"{name}: content hash differs from the specification")
        c, d, t = standard_split_sizes(name)
        draw = fresh_stream().index_set(c + d + t, len(table))
        lines = "".join(json.dumps([i, table[i][0], table[i][1]], ensure_ascii=False) + "\n" for i in draw)
        payload = gzip_bytes(lines)
        file_name = cached["resource_name"].split("/")[-1].replace(".dataset", ".jsonl.gz")
        with open(os.path.join(out_dir, file_name), "wb") as fh:
            fh.write(payload)
        manifest["files"][name] = {
            "file": file_name, "sha256": hashlib.sha256(payload).hexdigest(),
            "rows": len(draw), "table_rows": len(table), "table_content_sha256": cached["content_sha256"],
            "split_sizes": [c, d, t],
        }
        entry = {key: ds[key] for key in KEPT_FIELDS}
        entry["table_rows"] = len(table)
        constants.append(entry)
        print(f"{name:22s} table {len(table):6d} rows -> {len(draw):5d} drawn rows, {len(payload):8d} bytes")
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, ensure_ascii=False, sort_keys=True)
        fh.write("\n")
    with open(os.path.join(out_dir, "datasets.json"), "w", encoding="utf-8") as fh:
        json.dump({"format_version": spec["format_version"], "datasets": constants}, fh,
                  indent=1, ensure_ascii=False)
        fh.write("\n")
    pinned = {name: _file_sha256(os.path.join(out_dir, file_name)) for name, file_name in
              (("MANIFEST_SHA256", "manifest.json"), ("CONSTANTS_SHA256", "datasets.json"))}
    for name, digest in pinned.items():
        print(f"{name} = {digest!r}")
    if os.path.abspath(out_dir) == os.path.abspath(DATA_DIR):
        write_pins(pinned)
        print(f"updated {PINS_FILE}")
    else:
        print(f"(not written to {PINS_FILE}: the output is not StaICC/data)")
    return manifest


PINS_FILE = os.path.join(ROOT, "StaICC", "datasets", "pins.py")


def _file_sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def write_pins(pinned: dict, path: str = PINS_FILE) -> None:
    """Replace the two hash constants of StaICC/datasets/pins.py, keeping its docstring."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines):
        for name, digest in pinned.items():
            if line.startswith(name + " = "):
                lines[i] = f'{name} = "{digest}"'
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", help="path of StaICC-0.1.1-py3-none-any.whl (downloaded with pip if absent)")
    parser.add_argument("--spec", default=DEFAULT_SPEC, help="the specification's datasets.json")
    parser.add_argument("--out", default=DATA_DIR, help="output folder (default: StaICC/data)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.wheel:
        freeze(args.wheel, args.spec, args.out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            freeze(fetch_wheel(tmp), args.spec, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
