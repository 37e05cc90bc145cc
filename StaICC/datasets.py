"""Datasets: rows, label spaces and default templates (spec §2).

A :class:`Dataset` (the original's ``basic_datasets_loader``) is a table of rows
``(inputs, raw_label)`` plus the template attributes that the prompt writer copies.
Seen from outside, a row is ``(inputs, label_text)``.

The ten standard datasets are bundled as gzip JSON Lines holding only the rows
the standard uses: the first C+D+T rows of the standard split draw (§3), in draw
order.  Because the draw is sequential, every split whose total does not exceed
that (Normal, the diagnoses, Template_sens, Demo_sens) is served exactly.  Files
are read lazily, verified against ``manifest.json`` and cached per process, so a
Triplet_bias loads each file once.
"""
import copy
import gzip
import hashlib
import io
import json
import threading
from array import array
from importlib import resources
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .errors import warn, warn_tampering
from .rng import StableRandom
from .standard import BASE_TEMPLATE, NOT_APPLICABLE_WARNING, SEED, STRICT_TEMPLATE_WARNING, TEMPLATE_FIELDS

Row = Tuple[List[str], int]


def template_of(obj: Any) -> Dict[str, Any]:
    """The template attributes (``_instruction`` ...) of a dataset or a prompt writer, copied."""
    values = {field: getattr(obj, "_" + field) for field in TEMPLATE_FIELDS}
    return {field: list(v) if isinstance(v, list) else v for field, v in values.items()}

# ----------------------------------------------------------------------------
# bundled files
# ----------------------------------------------------------------------------
_DATA_PACKAGE = "StaICC.data"
_lock = threading.RLock()
_json_cache: Dict[str, Any] = {}
_table_cache: Dict[str, "DrawnTable"] = {}


class DataFileError(RuntimeError):
    """A bundled data file is missing or does not match its checksum."""


def _read_data_file(file_name: str) -> bytes:
    try:
        return resources.files(_DATA_PACKAGE).joinpath(file_name).read_bytes()
    except (FileNotFoundError, OSError) as exc:
        raise DataFileError(f"bundled data file {file_name!r} is missing from the StaICC package "
                            f"(reinstall it, or regenerate with tools/freeze_data.py)") from exc


def _load_json(file_name: str) -> Any:
    with _lock:
        if file_name not in _json_cache:
            _json_cache[file_name] = json.loads(_read_data_file(file_name).decode("utf-8"))
        return _json_cache[file_name]


def manifest() -> Dict[str, Any]:
    return _load_json("manifest.json")


def _all_constants() -> List[Dict[str, Any]]:
    return _load_json("datasets.json")["datasets"]


def standard_dataset_names() -> List[str]:
    """The ten standard datasets, in benchmark order."""
    return [entry["name"] for entry in _all_constants()]


def dataset_constants(name: str) -> Dict[str, Any]:
    """Per-dataset constants of the standard (templates, label words, sizes), a deep copy."""
    for entry in _all_constants():
        if entry["name"] == name or entry["loader"] == name:
            return copy.deepcopy(entry)
    raise ValueError(f"unknown dataset {name!r}; the standard datasets are {standard_dataset_names()}")


def _load_drawn_rows(name: str) -> Tuple[List[Row], "array"]:
    info = manifest()["files"][name]
    payload = _read_data_file(info["file"])
    digest = hashlib.sha256(payload).hexdigest()
    if digest != info["sha256"]:
        raise DataFileError(f"bundled data file {info['file']!r} is corrupted: SHA-256 {digest} "
                            f"instead of {info['sha256']} (reinstall, or run tools/freeze_data.py)")
    rows: List[Row] = []
    table_indexes = array("l")
    # Stream the lines (newline="\n": texts contain U+2028 and friends, which are not row ends).
    with io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(payload)), encoding="utf-8", newline="\n") as lines:
        for line in lines:
            index, inputs, label = json.loads(line)
            table_indexes.append(index)
            rows.append((tuple(inputs), label))
    if len(rows) != info["rows"]:
        raise DataFileError(f"bundled data file {info['file']!r} has {len(rows)} rows, expected {info['rows']}")
    return rows, table_indexes


# ----------------------------------------------------------------------------
# tables: where rows come from
# ----------------------------------------------------------------------------
class ListTable:
    """A whole table in memory (custom data, or a standard dataset built from source)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Row:
        return self.rows[index]

    def __iter__(self):
        return iter(self.rows)

    def draw(self, total: int, seed: int = SEED) -> List[Row]:
        """Rows at the first ``total`` indexes of the split draw (spec §3)."""
        indexes = StableRandom(seed).index_set(total, len(self.rows))
        return [self.rows[i] for i in indexes]


class DrawnTable:
    """A bundled standard table: only its split-draw prefix is shipped, loaded lazily."""

    def __init__(self, name: str) -> None:
        info = manifest()["files"][name]
        self.name = name
        self.table_rows: int = info["table_rows"]
        self.shipped_rows: int = info["rows"]
        self._rows: Optional[List[Row]] = None
        self._table_indexes: Optional[List[int]] = None

    def _ensure(self) -> None:
        if self._rows is None:
            self._rows, self._table_indexes = _load_drawn_rows(self.name)

    @property
    def drawn_rows(self) -> List[Row]:
        self._ensure()
        return self._rows

    @property
    def table_indexes(self) -> List[int]:
        """Original table index of each shipped row, in draw order."""
        self._ensure()
        return list(self._table_indexes)

    def __len__(self) -> int:
        return self.table_rows

    def __getitem__(self, index: int) -> Row:
        raise IndexError(f"{self.name}: StaICC ships only the rows drawn by the standard split; "
                         "access rows through the split parts (calibration/demonstration/test)")

    def draw(self, total: int, seed: int = SEED) -> "DrawnSlice":
        if seed != SEED or total > self.shipped_rows:
            raise ValueError(
                f"{self.name}: a split of {total} rows with seed {seed} needs the full table, but StaICC "
                f"ships only the {self.shipped_rows} rows of the standard draw (seed {SEED}). Splits of up "
                f"to {self.shipped_rows} rows with the standard seed are exact; for others build the "
                "dataset from source (from_cache=False, needs the `datasets` package).")
        return DrawnSlice(self, 0, total)


class DrawnSlice:
    """Rows ``start:stop`` of a bundled draw, read from disk only when first touched.

    Building a benchmark therefore reads no data at all; each dataset is decoded the
    first time one of its prompts is written.
    """

    def __init__(self, table: DrawnTable, start: int, stop: int) -> None:
        self.table, self.start, self.stop = table, start, stop
        self._rows: Optional[List[Row]] = None

    @property
    def rows(self) -> List[Row]:
        if self._rows is None:
            self._rows = self.table.drawn_rows[self.start:self.stop]
        return self._rows

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, index):
        if isinstance(index, slice):
            begin, end, step = index.indices(len(self))
            if step == 1:
                return DrawnSlice(self.table, self.start + begin, self.start + max(begin, end))
            return self.rows[index]
        return self.rows[index]

    def __iter__(self):
        return iter(self.rows)


def bundled_table(name: str) -> DrawnTable:
    with _lock:
        if name not in _table_cache:
            _table_cache[name] = DrawnTable(name)
        return _table_cache[name]


# ----------------------------------------------------------------------------
# the dataset object
# ----------------------------------------------------------------------------
class Dataset:
    """Rows plus label space and default template (the original's ``basic_datasets_loader``)."""

    def __init__(self, name: str, rows, label_space: Sequence[str], *,
                 instruction: str = BASE_TEMPLATE["instruction"],
                 input_text_prefixes: Optional[Sequence[str]] = None,
                 input_text_affixes: Optional[Sequence[str]] = None,
                 label_prefix: str = BASE_TEMPLATE["label_prefix"],
                 label_affix: str = BASE_TEMPLATE["label_affix"],
                 query_prefix: str = BASE_TEMPLATE["query_prefix"],
                 label_mapping: Optional[Dict[int, int]] = None,
                 ground_truth_label_space: Optional[Sequence[str]] = None,
                 reduced_label_space: Optional[Sequence[str]] = None,
                 alternate_template: Optional[Dict[str, list]] = None,
                 split_sizes: Optional[Tuple[int, int, int]] = None,
                 standard: bool = False) -> None:
        self.dataset_name = name
        self.table = rows if isinstance(rows, (ListTable, DrawnTable, DrawnSlice)) else ListTable(rows)
        self.label_space = list(label_space)
        self.label_mapping = dict(label_mapping) if label_mapping is not None else {i: i for i in range(len(label_space))}
        self.ground_truth_label_space = list(ground_truth_label_space) if ground_truth_label_space else None
        self.reduced_label_space = list(reduced_label_space) if reduced_label_space else None
        self._instruction = instruction
        self._input_text_prefixes = list(input_text_prefixes or BASE_TEMPLATE["input_text_prefixes"])
        self._input_text_affixes = list(input_text_affixes or BASE_TEMPLATE["input_text_affixes"])
        self._label_prefix = label_prefix
        self._label_affix = label_affix
        self._query_prefix = query_prefix
        self.alternate_template = copy.deepcopy(alternate_template) if alternate_template else None
        self.split_sizes = tuple(split_sizes) if split_sizes else None
        self.standard = standard

    # -- row access (outside view: (inputs, label text)) --------------------
    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> Tuple[List[str], str]:
        inputs, raw = self.table[index]
        return list(inputs), self.label_space[self.label_mapping[raw]]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def get_input_text(self, index: int) -> List[str]:
        return list(self.table[index][0])

    def get_label(self, index: int) -> str:
        return self.label_space[self.label_mapping[self.table[index][1]]]

    def label_index(self, index: int) -> int:
        """Ground-truth label index: position of the label text in the label space (first match)."""
        return self.label_space.index(self.get_label(index))

    def label_indexes(self) -> List[int]:
        return [self.label_index(i) for i in range(len(self))]

    def label_index_to_text(self, index: int) -> str:
        return self.label_space[index]

    def get_label_space(self) -> List[str]:
        return list(self.label_space)

    def input_element_numbers(self) -> int:
        return len(self.table[0][0]) if len(self) else len(self._input_text_prefixes)

    @property
    def name(self) -> str:
        return self.dataset_name

    # -- templates: read access --------------------------------------------
    def default_template(self) -> Dict[str, Any]:
        return template_of(self)

    # -- strict-mode template protection (spec §2.4) --------------------------
    def _strict(self, *_args) -> None:
        warn(STRICT_TEMPLATE_WARNING)

    change_instruction = change_input_text_prefixes = change_input_text_affixes = _strict
    change_label_prefix = change_label_affix = change_query_prefix = _strict

    def change_label_space(self, label_space: Sequence[str]) -> None:
        warn_tampering(f"label space of {self.dataset_name} changed to {list(label_space)}")
        self.label_space = list(label_space)

    def full_label_token(self) -> None:
        if self.ground_truth_label_space is None:
            warn(NOT_APPLICABLE_WARNING)
            return
        self.change_label_space(self.ground_truth_label_space)

    def reduce_label_token(self) -> None:
        if self.reduced_label_space is None:
            warn(NOT_APPLICABLE_WARNING)
            return
        self.label_space = list(self.reduced_label_space)

    # -- splitting ----------------------------------------------------------
    def with_rows(self, rows, name: str) -> "Dataset":
        """A copy holding only ``rows`` (no copy of the row strings themselves)."""
        part = copy.copy(self)
        part.dataset_name = name
        part.table = rows if isinstance(rows, DrawnSlice) else ListTable(rows)
        part.label_space = list(self.label_space)
        part.label_mapping = dict(self.label_mapping)
        part._input_text_prefixes = list(self._input_text_prefixes)
        part._input_text_affixes = list(self._input_text_affixes)
        return part

    def split(self, split_indexes: Sequence[Sequence[int]]) -> List["Dataset"]:
        """One part per index list (the original's public ``split``)."""
        return [self.with_rows([self.table[i] for i in part], self.dataset_name) for part in split_indexes]

    def draw_rows(self, total: int, seed: int = SEED):
        return self.table.draw(total, seed)

    def content_sha256(self) -> str:
        """STANDARD.md §10.2 content hash over the rows held."""
        h = hashlib.sha256()
        for i in range(len(self)):
            inputs, raw = self.table[i]
            h.update(("\x1f".join(inputs) + "\x1f" + str(raw) + "\x1e").encode("utf-8"))
        return h.hexdigest()

    def __repr__(self) -> str:
        return f"Dataset({self.dataset_name!r}, rows={len(self)}, labels={self.label_space})"


basic_datasets_loader = Dataset  # the original's name


# ----------------------------------------------------------------------------
# the standard loaders
# ----------------------------------------------------------------------------
def load_standard_dataset(name: str, from_cache: bool = True, long_text_classification: bool = False) -> Dataset:
    """One of the ten standard datasets, from the bundled rows (default) or built from source."""
    const = dataset_constants(name)
    table = bundled_table(const["name"]) if from_cache else _build_from_source(const, long_text_classification)
    sizes = const["split_sizes"]
    return Dataset(
        const["name"], table, const["label_space"],
        instruction=const["instruction"], input_text_prefixes=const["input_text_prefixes"],
        input_text_affixes=const["input_text_affixes"], label_prefix=const["label_prefix"],
        label_affix=const["label_affix"], query_prefix=const["query_prefix"],
        label_mapping={int(k): v for k, v in const["label_mapping"].items()},
        ground_truth_label_space=const["ground_truth_label_space"],
        reduced_label_space=const["reduced_label_space"],
        alternate_template=const["alternate_template"],
        split_sizes=(sizes["calibration"], sizes["demonstration"], sizes["test"]), standard=True)


def _build_from_source(const: Dict[str, Any], long_text_classification: bool) -> ListTable:
    """Spec §2.5: HuggingFace rows, length cut, shuffle with a fresh stream (non-default path)."""
    try:
        import datasets as hf_datasets  # optional extra
    except ImportError as exc:
        raise ImportError("building a standard dataset from source needs the `datasets` package: "
                          "pip install 'StaICC[source]'") from exc
    source = const["hf_source"]
    rows: List[Row] = []
    for split in source["splits"]:
        part = hf_datasets.load_dataset(source["path"], source["config"], split=split)
        rows.extend(([r[const["text_field"]]], int(r[const["label_field"]])) for r in part)
    if long_text_classification:
        rows = [r for r in rows if sum(len(t) for t in r[0]) >= 8192]
    else:
        rows = [r for r in rows if sum(len(t) for t in r[0]) <= 1024]
    order = StableRandom(SEED).index_set(len(rows), len(rows))
    return ListTable([rows[i] for i in order])


def _make_loader(loader_name: str, dataset_name: str, full_labels: bool = False) -> type:
    """A class whose construction returns the standard dataset (the original's loader classes).

    ``full_labels`` gives the variant with the ground-truth label words (spec §2.3), which
    the benchmarks never use; the original's SST5 variant forgot to switch (§11.3.12), this
    one switches and warns like ``full_label_token``.
    """
    def __new__(cls, from_cache: bool = True, long_text_classification: bool = False) -> Dataset:
        dataset = load_standard_dataset(dataset_name, from_cache, long_text_classification)
        if full_labels:
            dataset.full_label_token()
        return dataset
    doc = f"{dataset_name!r} with its ground-truth label words." if full_labels else \
        f"Loader of the standard dataset {dataset_name!r}."
    return type(loader_name, (), {"__new__": __new__, "dataset_name": dataset_name, "__doc__": doc})


glue_sst2 = _make_loader("glue_sst2", "GLUE-SST2")
rotten_tomatoes = _make_loader("rotten_tomatoes", "rotten_tomatoes")
financial_phrasebank = _make_loader("financial_phrasebank", "financial_phrasebank")
sst5 = _make_loader("sst5", "SST5")
trec = _make_loader("trec", "TREC")
agnews = _make_loader("agnews", "AGNews")
subjective = _make_loader("subjective", "Subjective")
tweet_eval_emotion = _make_loader("tweet_eval_emotion", "tweet_eval_emotion")
tweet_eval_hate = _make_loader("tweet_eval_hate", "tweet_eval_hate")
hate_speech_18 = _make_loader("hate_speech_18", "hate_speech_18")

un_reducted_sst5 = _make_loader("un_reducted_sst5", "SST5", full_labels=True)
un_reducted_trec = _make_loader("un_reducted_trec", "TREC", full_labels=True)
un_reducted_agnews = _make_loader("un_reducted_agnews", "AGNews", full_labels=True)
un_reducted_tweet_eval_emotion = _make_loader("un_reducted_tweet_eval_emotion", "tweet_eval_emotion", full_labels=True)

STANDARD_LOADERS = [glue_sst2, rotten_tomatoes, financial_phrasebank, sst5, trec, agnews,
                    subjective, tweet_eval_emotion, tweet_eval_hate, hate_speech_18]


def resolve_dataset(spec: Any) -> Dataset:
    """A Dataset from a name, a benchmark index, a loader class or a Dataset (validated)."""
    if isinstance(spec, Dataset):
        return spec
    if isinstance(spec, bool):
        raise TypeError(f"expected a dataset name, index, loader or Dataset, got {spec!r}")
    if isinstance(spec, int):
        names = standard_dataset_names()
        if not 0 <= spec < len(names):
            raise ValueError(f"dataset index {spec} out of range: the standard has {len(names)} datasets (0..{len(names) - 1})")
        return load_standard_dataset(names[spec])
    if isinstance(spec, str):
        return load_standard_dataset(spec)
    if isinstance(spec, type) or callable(spec):
        made = spec()
        if not isinstance(made, Dataset):
            raise TypeError(f"dataset loader {spec!r} returned {type(made).__name__}, expected a Dataset")
        return made
    raise TypeError(f"expected a dataset name, index, loader or Dataset, got {type(spec).__name__}")


def resolve_datasets(specs: Optional[Iterable[Any]]) -> List[Dataset]:
    if specs is None:
        return [loader() for loader in STANDARD_LOADERS]
    if isinstance(specs, (str, Dataset)) or not isinstance(specs, Iterable):
        specs = [specs]
    resolved = [resolve_dataset(s) for s in specs]
    if not resolved:
        raise ValueError("a benchmark needs at least one dataset")
    return resolved


def verify_datasets(datasets) -> None:
    """TEMPORARY stand-in until the data branch lands."""
