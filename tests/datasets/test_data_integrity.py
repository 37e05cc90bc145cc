"""Bundled data integrity: every tampering with StaICC/data is refused before any inference.

Each test works on a copy of the package's data folder (``bundled._data_dir`` points at it)
and tampers with it; the error must be a :class:`DataFileError` whose message and ``path``
name the file.  "Pinned" tests also update the hashes pinned in code, as a developer
regenerating the data would, to reach the structural checks behind the pins.
"""
import gzip
import hashlib
import json
import os
import shutil

import pytest

import StaICC.datasets as dsm
from StaICC.datasets import (DataFileError, bundled, bundled_table, load_standard_dataset, pins, resolve_datasets,
                             verify_datasets)
from StaICC.datasets.split import triplet_dataset

from conftest import DATASET_NAMES, REPO_ROOT

PACKAGE_DATA = str(REPO_ROOT / "StaICC" / "data")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A copy of the bundled data, used instead of the package's; the real caches come back afterwards."""
    target = tmp_path / "data"
    shutil.copytree(PACKAGE_DATA, target)
    saved_json, saved_tables = dict(bundled._json_cache), dict(dsm.tables._table_cache)
    monkeypatch.setattr(bundled, "_data_dir", str(target))
    bundled._reset_caches()
    yield target
    bundled._reset_caches()
    bundled._json_cache.update(saved_json)
    dsm.tables._table_cache.update(saved_tables)


def read_json(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False, sort_keys=True)


def sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def pin_current(data_dir, monkeypatch):
    """Pin the hashes of the (tampered) index files, as tools/freeze_data.py would."""
    monkeypatch.setattr(pins, "MANIFEST_SHA256", sha(data_dir / "manifest.json"))
    monkeypatch.setattr(pins, "CONSTANTS_SHA256", sha(data_dir / "datasets.json"))


def rewrite_rows(data_dir, file_name, edit):
    """Decompress a data file, apply ``edit`` to its lines, recompress, rehash it in the manifest."""
    path = data_dir / file_name
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")
    path.write_bytes(gzip.compress("\n".join(edit(lines)).encode("utf-8"), mtime=0))
    manifest = read_json(data_dir / "manifest.json")
    for info in manifest["files"].values():
        if info["file"] == file_name:
            info["sha256"] = sha(path)
    write_json(data_dir / "manifest.json", manifest)


def edit_manifest(data_dir, edit):
    manifest = read_json(data_dir / "manifest.json")
    edit(manifest)
    write_json(data_dir / "manifest.json", manifest)


def assert_refused(data_dir, file_name, match):
    """Building every standard dataset and verifying them raises DataFileError naming the file."""
    with pytest.raises(DataFileError, match=match) as caught:
        verify_datasets(resolve_datasets(None))
    path = str(data_dir / file_name)
    assert caught.value.path == path
    assert f"bundled data file {file_name!r}" in str(caught.value) and path in str(caught.value)
    return caught.value


def change_one_label(lines):
    index, inputs, label = json.loads(lines[0])
    lines[0] = json.dumps([index, inputs, 1 - label if label in (0, 1) else 0], ensure_ascii=False)
    return lines


# -- tampering caught by the hashes pinned in code --------------------------------------------------
def test_manifest_row_edited_and_rehashed_is_refused(data_dir):
    rewrite_rows(data_dir, "trec.jsonl.gz", change_one_label)
    assert_refused(data_dir, "manifest.json", r"is corrupted: SHA-256 .* pinned in StaICC.datasets.pins")


def test_dataset_pointed_at_another_file_is_refused(data_dir):
    def point_trec_at_sst2(manifest):
        manifest["files"]["TREC"]["file"] = "sst2.jsonl.gz"
        manifest["files"]["TREC"]["sha256"] = manifest["files"]["GLUE-SST2"]["sha256"]
    edit_manifest(data_dir, point_trec_at_sst2)
    assert_refused(data_dir, "manifest.json", "is corrupted")


def test_bit_flip_in_datasets_json_is_refused(data_dir):
    path = data_dir / "datasets.json"
    text = path.read_text(encoding="utf-8")
    assert '"skip"' in text
    path.write_text(text.replace('"skip"', '"skiq"', 1), encoding="utf-8")
    assert_refused(data_dir, "datasets.json", r"is corrupted: SHA-256 .*pins.CONSTANTS_SHA256")


def test_bit_flip_in_manifest_is_refused(data_dir):
    path = data_dir / "manifest.json"
    payload = bytearray(path.read_bytes())
    payload[100] ^= 1
    path.write_bytes(bytes(payload))
    assert_refused(data_dir, "manifest.json", "is corrupted")


@pytest.mark.parametrize("damage", ["truncate", "random", "empty", "bit"])
def test_damaged_data_file_is_refused(data_dir, damage):
    path = data_dir / "trec.jsonl.gz"
    payload = path.read_bytes()
    damaged = {"truncate": payload[:len(payload) // 2], "random": os.urandom(len(payload)), "empty": b"",
               "bit": payload[:5000] + bytes([payload[5000] ^ 4]) + payload[5001:]}[damage]
    path.write_bytes(damaged)
    assert_refused(data_dir, "trec.jsonl.gz", r"is corrupted: SHA-256 .* pinned in manifest.json")


@pytest.mark.parametrize("file_name", ["trec.jsonl.gz", "manifest.json", "datasets.json"])
def test_missing_file_is_refused(data_dir, file_name):
    os.remove(data_dir / file_name)
    assert_refused(data_dir, file_name, "is missing from the StaICC package")


def test_corrupted_file_raises_data_file_error(data_dir):
    path = data_dir / "rotten_tomatoes.jsonl.gz"
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(DataFileError, match=r"bundled data file 'rotten_tomatoes.jsonl.gz' is corrupted: SHA-256"):
        bundled_table("rotten_tomatoes").drawn_rows
    with pytest.raises(DataFileError, match="rotten_tomatoes.jsonl.gz"):
        triplet_dataset(load_standard_dataset("rotten_tomatoes")).test[0]  # rows may be read lazily
    # another dataset is unaffected
    assert len(bundled_table("financial_phrasebank").drawn_rows) == 2048


# -- behind the pins: a regenerated but malformed data folder is still refused, naming the file -----
def test_missing_file_raises_data_file_error(data_dir, monkeypatch):
    edit_manifest(data_dir, lambda m: m["files"]["rotten_tomatoes"].update(file="no_such_file.jsonl.gz"))
    pin_current(data_dir, monkeypatch)
    with pytest.raises(DataFileError, match=r"bundled data file 'no_such_file.jsonl.gz' is missing"):
        bundled_table("rotten_tomatoes").drawn_rows


def test_row_count_mismatch_raises(data_dir, monkeypatch):
    rewrite_rows(data_dir, "rotten_tomatoes.jsonl.gz", lambda lines: lines[:10])
    pin_current(data_dir, monkeypatch)
    with pytest.raises(DataFileError, match=r"has 10 rows, expected 5632"):
        bundled_table("rotten_tomatoes").drawn_rows


def test_pinned_file_swap_is_refused_as_a_duplicate(data_dir, monkeypatch):
    def point_trec_at_sst2(manifest):
        manifest["files"]["TREC"]["file"] = "sst2.jsonl.gz"
        manifest["files"]["TREC"]["sha256"] = manifest["files"]["GLUE-SST2"]["sha256"]
    edit_manifest(data_dir, point_trec_at_sst2)
    pin_current(data_dir, monkeypatch)
    assert_refused(data_dir, "manifest.json", "entry 'TREC' names the file 'sst2.jsonl.gz' of entry 'GLUE-SST2'")


@pytest.mark.parametrize("file_name, content, match", [
    ("manifest.json", b"{not json", "is not valid JSON"),
    ("manifest.json", b"\xff\xfe{}", "is not UTF-8"),
    ("manifest.json", b"[]", "has no 'files' table"),
    ("manifest.json", b'{"files": {"TREC": {"file": "../../etc/passwd"}}}', "must be a plain"),
    ("datasets.json", b'{"datasets": []}', "has no 'datasets' list"),
    ("datasets.json", b'{"datasets": [{"name": "TREC"}]}', r"datasets\[0\] lacks the fields"),
])
def test_malformed_index_files_are_refused(data_dir, monkeypatch, file_name, content, match):
    (data_dir / file_name).write_bytes(content)
    pin_current(data_dir, monkeypatch)
    assert_refused(data_dir, file_name, match)


def test_constants_disagreeing_with_the_manifest_are_refused(data_dir, monkeypatch):
    constants = read_json(data_dir / "datasets.json")
    constants["datasets"][4]["split_sizes"]["test"] = 500
    write_json(data_dir / "datasets.json", constants)
    pin_current(data_dir, monkeypatch)
    assert_refused(data_dir, "datasets.json", r"datasets\[4\] \(TREC\): 'split_sizes' differ from manifest.json")


@pytest.mark.parametrize("edit, match", [
    (lambda lines: ["not json"] + lines[1:], r"line 1: Expecting value"),
    (lambda lines: lines[:3] + ['[1, "text", 0]'] + lines[4:], r"line 4: expected \[table_index, \[input"),
    (lambda lines: lines[:2] + ['[1, ["text"], 99]'] + lines[3:], r"line 3: .*raw label of \[0, 1, 2, 3, 4, 5\]"),
    (lambda lines: ["[1, 2]"] + lines[1:], "line 1: not enough values to unpack"),
])
def test_malformed_rows_are_refused_with_their_line(data_dir, monkeypatch, edit, match):
    rewrite_rows(data_dir, "trec.jsonl.gz", edit)
    pin_current(data_dir, monkeypatch)
    assert_refused(data_dir, "trec.jsonl.gz", match)


def test_truncated_gzip_behind_a_matching_hash_is_refused(data_dir, monkeypatch):
    path = data_dir / "trec.jsonl.gz"
    path.write_bytes(path.read_bytes()[:20000])
    edit_manifest(data_dir, lambda m: m["files"]["TREC"].update(sha256=sha(path)))
    pin_current(data_dir, monkeypatch)
    assert_refused(data_dir, "trec.jsonl.gz", "is not a valid gzip file")


# -- verify_datasets ----------------------------------------------------------------------------------
def test_verify_reads_each_file_once_per_process(data_dir, monkeypatch):
    reads = []
    real = bundled._read_data_file
    monkeypatch.setattr(bundled, "_read_data_file", lambda name: reads.append(name) or real(name))
    datasets = resolve_datasets(["TREC", "AGNews"])
    assert sorted(reads) == ["datasets.json", "manifest.json"]
    verify_datasets(datasets)
    verify_datasets(datasets + [triplet_dataset(datasets[0])])
    assert sorted(reads[2:]) == ["agnews.jsonl.gz", "trec.jsonl.gz"]
    triplet_dataset(datasets[0]).test[0]  # the run reads the verified rows from memory
    assert len(reads) == 4


def test_verify_refuses_before_any_inference_and_again_on_retry(data_dir):
    (data_dir / "trec.jsonl.gz").write_bytes(b"garbage")
    datasets = resolve_datasets(None)  # construction reads no data file
    for _ in range(2):  # a failed file is not remembered as verified
        with pytest.raises(DataFileError, match="trec.jsonl.gz"):
            verify_datasets(datasets)


def test_verify_accepts_custom_data_and_refuses_other_objects():
    from StaICC.custom_datasets import from_records
    mine = from_records([{"t": f"text {i}", "y": i % 2} for i in range(10)], name="mine", input_columns="t",
                        label_column="y")
    verify_datasets([mine])
    verify_datasets(mine)
    with pytest.raises(TypeError, match="item 0 is a str, expected a Dataset"):
        verify_datasets(["TREC"])
    with pytest.raises(TypeError, match="verify_datasets expects Dataset objects"):
        verify_datasets("TREC")


def test_real_files_verify():
    verify_datasets(resolve_datasets(None))
    for name in DATASET_NAMES:
        info = dsm.manifest()["files"][name]
        assert hashlib.sha256(dsm._read_data_file(info["file"])).hexdigest() == info["sha256"]
    assert dsm.manifest_sha256() == hashlib.sha256(dsm._read_data_file("manifest.json")).hexdigest()
