"""The dataset object: rows, label space and default template.

A :class:`Dataset` (the original's ``basic_datasets_loader``) is a table of rows
``(inputs, raw_label)`` plus the template attributes that the prompt writer copies.
Seen from outside, a row is ``(inputs, label_text)``.
"""
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import OutOfRangeError, warn, warn_tampering
from ..standard import BASE_TEMPLATE, NOT_APPLICABLE_WARNING, SEED, STRICT_TEMPLATE_WARNING, TEMPLATE_FIELDS
from ..validation import check_int, check_label_space
from .bundled import Row  # noqa: F401  (the row type, re-exported)
from .tables import DrawnSlice, DrawnTable, ListTable
from ..errors import InvalidTypeError, InvalidValueError


def template_of(obj: Any) -> Dict[str, Any]:
    """The template attributes (``_instruction`` ...) of a dataset or a prompt writer, copied."""
    values = {field: getattr(obj, "_" + field) for field in TEMPLATE_FIELDS}
    return {field: list(v) if isinstance(v, list) else v for field, v in values.items()}


# ----------------------------------------------------------------------------
# the dataset object
# ----------------------------------------------------------------------------
class Dataset:
    """Rows plus label space and default template (the original's ``basic_datasets_loader``).

    ``split_sizes`` is the default (calibration, demonstration, test) split of the dataset,
    or None when every split must give its sizes.  ``fixed_split`` (a
    :class:`~StaICC.datasets.split.FixedSplit`, or None) names each row's part for data
    that comes with its own split; the triplet split then uses it instead of drawing.
    """

    fixed_split: Any = None
    #: each table row's own id (one's own data: its id column's value or its line), None: the table index
    row_ids: Any = None

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
        self.alternate_template = _deepcopy(alternate_template) if alternate_template else None
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
        """Input strings per row (1 for every standard dataset).

        A bundled standard table serves no row by table index; its template has one
        prefix per input element, so the count is read from there without touching data.
        """
        if isinstance(self.table, DrawnTable) or not len(self):
            return len(self._input_text_prefixes)
        return len(self.table[0][0])

    def get_input_element_numbers(self) -> int:
        return self.input_element_numbers()

    def get_dataset_name(self) -> str:
        return self.dataset_name

    def _row(self, index: Any, what: str):
        """Row ``index`` of the table; the index must be an int in range (negative ones count from the end)."""
        index = check_int(index, what, at=f" (dataset {self.dataset_name!r})")
        if not -len(self) <= index < len(self):
            raise OutOfRangeError(f"{what} {index} is out of range: dataset {self.dataset_name!r} has {len(self)} rows")
        return self.table[index]

    def get_total_length_of_one_data(self, index: int) -> int:
        """Sum of the code-point lengths of row ``index``'s input strings (the length the length cut reads)."""
        total = 0
        for text in self._row(index, "row index")[0]:
            total += len(text)
        return total

    def find_index_from_label(self, label: str) -> int:
        """Position of the label text in the label space (first match)."""
        try:
            return self.label_space.index(label)
        except ValueError:
            raise InvalidValueError(f"{label!r} is not in list: the label space of dataset {self.dataset_name!r} "
                                    f"is {self.label_space}") from None

    def get_dataset(self) -> List[Tuple[List[str], int]]:
        """The raw rows ``([input, ...], raw_label_id)`` as a new list (the row strings are shared, not copied)."""
        if isinstance(self.table, DrawnTable):
            raise InvalidValueError(f"get_dataset of {self.dataset_name!r}: StaICC ships only the rows drawn by the "
                                    "standard split, not the whole table; read a split part's rows instead "
                                    "(triplet.test.get_dataset()), or load the dataset from source (from_cache=False)")
        return [(list(inputs), raw) for inputs, raw in self.table]

    @property
    def name(self) -> str:
        return self.dataset_name

    # -- templates: read access --------------------------------------------
    def default_template(self) -> Dict[str, Any]:
        return template_of(self)

    def get_instruction(self) -> str:
        return self._instruction

    def get_input_text_prefixes(self) -> List[str]:
        return list(self._input_text_prefixes)

    def get_input_text_affixes(self) -> List[str]:
        return list(self._input_text_affixes)

    def get_label_prefix(self) -> str:
        return self._label_prefix

    def get_label_affix(self) -> str:
        return self._label_affix

    def get_query_prefix(self) -> str:
        return self._query_prefix

    def get_alternate_template(self) -> Optional[Dict[str, list]]:
        """The Template_sens alternatives (a copy: editing it cannot change the benchmark), or None."""
        return _deepcopy(self.alternate_template) if self.alternate_template is not None else None

    # -- strict mode: the default template cannot be edited on the dataset ----
    def _strict(self, *_args) -> None:
        warn(STRICT_TEMPLATE_WARNING)

    change_instruction = change_input_text_prefixes = change_input_text_affixes = _strict
    change_label_prefix = change_label_affix = change_query_prefix = _strict

    def change_label_space(self, label_space: Sequence[str]) -> None:
        """New label words, one per label: the label mapping indexes this list, so the count is fixed."""
        at = f" (dataset {self.dataset_name!r})"
        space = check_label_space(label_space, at=at)
        if len(space) != len(self.label_space):
            raise InvalidValueError(f"the label space needs {len(self.label_space)} words (one per label){at}, "
                                    f"got {len(space)}")
        warn_tampering(f"label space of {self.dataset_name} changed to {space}")
        self.label_space = space

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

    reduct_label_token = reduce_label_token  # the original's name

    # -- editing the rows and the name (both make the dataset non-standard) ----
    def cut_by_index(self, n: int) -> "Dataset":
        """Keep only the first ``n`` rows (all when ``n`` >= the row count); returns this dataset.

        The table object is replaced, never edited, because tables (bundled ones above
        all) are shared with other Dataset objects and with later benchmarks.  Dropping
        rows of a standard dataset warns "tampering" and marks it non-standard.
        """
        n = check_int(n, "n", minimum=0, at=f" (cut_by_index of dataset {self.dataset_name!r})")
        if n >= len(self):
            return self
        if isinstance(self.table, DrawnTable):
            raise InvalidValueError(
                f"cut_by_index({n}) of dataset {self.dataset_name!r}: StaICC ships only the rows drawn by the "
                "standard split, not the first rows of the table; cut a split part instead "
                "(triplet.demonstration.cut_by_index(n)), or load the dataset from source (from_cache=False)")
        if self.standard:
            warn_tampering(f"{self.dataset_name} cut to its first {n} of {len(self)} rows")
        self.table = self.table[:n] if isinstance(self.table, DrawnSlice) else ListTable(list(self.table.rows[:n]))
        self.standard = False
        return self

    def rename_dataset(self, name: str) -> None:
        """Give the dataset a new name (the key of its results).

        A name that designates a standard dataset is refused, unless it is this standard
        dataset's own name: other data must not pass for the standard's.  Renaming a
        standard dataset warns "tampering" and marks it non-standard, since its results
        no longer key to the standard name.
        """
        from .bundled import standard_dataset_aliases
        if not isinstance(name, str) or not name.strip():
            raise InvalidTypeError(f"rename_dataset: the name must be a non-empty string, got {name!r}")
        if name == self.dataset_name:
            return
        if name.lower() in {alias.lower() for alias in standard_dataset_aliases()}:
            raise InvalidValueError(f"rename_dataset: {name!r} is the name of a standard StaICC dataset; choose another "
                                    f"name for dataset {self.dataset_name!r} so that its results cannot be mistaken "
                                    "for the standard's")
        if self.standard:
            warn_tampering(f"{self.dataset_name} renamed to {name}")
            self.standard = False
        self.dataset_name = name

    # -- splitting ----------------------------------------------------------
    def with_rows(self, rows, name: str) -> "Dataset":
        """A copy holding only ``rows`` (no copy of the row strings themselves)."""
        import copy
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
        """SHA-256 over the rows held: per row, the inputs joined by U+001F, U+001F, the raw label, U+001E."""
        import hashlib
        h = hashlib.sha256()
        for i in range(len(self)):
            inputs, raw = self.table[i]
            h.update(("\x1f".join(inputs) + "\x1f" + str(raw) + "\x1e").encode("utf-8"))
        return h.hexdigest()

    def verify(self) -> None:
        """Read and verify the bundled file behind these rows now (nothing for rows in memory)."""
        self.table.verify()

    def __repr__(self) -> str:
        sizes = f", split_sizes={self.split_sizes}" if self.split_sizes is not None else ""
        return f"Dataset({self.dataset_name!r}, rows={len(self)}, labels={self.label_space}{sizes})"


basic_datasets_loader = Dataset  # the original's name


def _deepcopy(value: Any) -> Any:
    import copy  # deferred: importing StaICC does not need it
    return copy.deepcopy(value)


def verify_datasets(datasets: Any) -> None:
    """Read and verify every bundled file these datasets need, before any inference.

    ``datasets``: a :class:`Dataset`, a ``triplet_dataset`` or an iterable of them.  Each
    bundled file is hash-checked against the manifest (itself checked against the hash
    pinned in code) and decoded; the decoded rows stay cached, so the cost is paid once per
    process and the run reads them from memory.  Raises :class:`DataFileError` naming the
    first bad file.  Datasets held in memory (custom data) need no file and pass.
    """
    items = [datasets] if isinstance(datasets, Dataset) or hasattr(datasets, "original_dataset") else datasets
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidTypeError(f"verify_datasets expects Dataset objects, got {type(datasets).__name__}")
    for position, item in enumerate(items):
        dataset = getattr(item, "original_dataset", item)  # a triplet_dataset: its source
        if not isinstance(dataset, Dataset):
            raise InvalidTypeError(f"verify_datasets: item {position} is a {type(item).__name__}, expected a Dataset")
        dataset.verify()
