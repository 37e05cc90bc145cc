"""Triplet split: calibration, demonstration and test parts of one dataset, drawn or fixed.

A dataset's split is drawn by the standard's generator (the first C rows of the draw are
calibration, the next D demonstration, the next T test), or, for one's own data, *fixed*:
each row says which part it belongs to (:class:`FixedSplit`), so that a paper can name
its test set.  Either way the parts are in the generator's order, so that a diagnosis
that evaluates fewer test items (Template_sens's 100, Demo_sens's 128) or a ``--limit``
smoke run takes a seeded random sample of the test part, never the first rows of a file.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import Dataset
from .tables import DrawnSlice
from ..rng import StableRandom
from ..errors import warn, warn_tampering
from ..standard import CALIBRATION_SIZE, SEED, STRICT_TEMPLATE_WARNING
from ..validation import check_int, check_label_space, check_str, check_str_list
from ..errors import InvalidValueError

#: the parts of a triplet split, in split order
PARTS = ("calibration", "demonstration", "test")
#: what one row of a fixed split may be: a part; ``train``, a row that the calibration part is drawn
#: from when no row is marked calibration (the rest are demonstrations); or ``unused``, a row left out
ROW_PARTS = PARTS + ("train", "unused")


@dataclass(frozen=True)
class FixedSplit:
    """A split given with the data: ``row_parts[i]`` is row i's part (one of :data:`ROW_PARTS`).

    ``calibration``, ``demonstration`` and ``test`` are the table indexes of each part in
    run order: the standard generator's order (seed 42), so that any first n test items
    are a seeded random sample of the fixed test rows.  ``how`` says where the split came
    from, in words (``column 'split'``), for errors, provenance and departures.
    """

    how: str
    row_parts: Tuple[str, ...]
    calibration: Tuple[int, ...]
    demonstration: Tuple[int, ...]
    test: Tuple[int, ...]
    row_names: Tuple[str, ...] = ()  # each row as its source names it ("line 7"), for provenance

    @property
    def sizes(self) -> Tuple[int, int, int]:
        return len(self.calibration), len(self.demonstration), len(self.test)

    def describe(self) -> str:
        """The split in plain words, as departures and ``tasks validate`` show it."""
        c, d, t = self.sizes
        return f"fixed split from {self.how}: {t} test, {d} demonstration, {c} calibration rows"

    def test_row_names(self) -> List[str]:
        """The test rows as their source names them, in run order (row indexes when no names were given)."""
        names = self.row_names or tuple(f"row {i}" for i in range(len(self.row_parts)))
        return [names[i] for i in self.test]

    def digest(self, dataset: Dataset) -> str:
        """SHA-256 over every part's rows in run order (per row: part, inputs, raw label): equal
        digests mean the same rows in the same parts in the same order."""
        import hashlib
        h = hashlib.sha256()
        for part in PARTS:
            for index in getattr(self, part):
                inputs, raw = dataset.table[index]
                h.update((part + "\x1f" + "\x1f".join(inputs) + "\x1f" + str(raw) + "\x1e").encode("utf-8"))
        return h.hexdigest()


def fix_split(row_parts: Sequence[str], how: str, row_names: Sequence[str] = ()) -> FixedSplit:
    """The :class:`FixedSplit` of rows whose parts are given.

    Rows marked ``train`` are split by the standard generator when no row is marked
    ``calibration``: ``min(1024, M // 4)`` of the M train rows become calibration rows
    (the default split's 1 : 3 ratio of calibration to demonstration rows), the rest
    demonstrations; when some row is marked calibration, every train row is a
    demonstration.  Raises ValueError when no row is a test row or a part is unknown.
    """
    parts = tuple(row_parts)
    by_part: Dict[str, List[int]] = {part: [] for part in ROW_PARTS}
    for index, part in enumerate(parts):
        if part not in by_part:
            raise InvalidValueError(f"row {index}: unknown split part {part!r}; expected one of {', '.join(ROW_PARTS)}")
        by_part[part].append(index)
    if not by_part["test"]:
        raise InvalidValueError(f"the split from {how} has no test row")
    calibration, demonstration, train = by_part["calibration"], by_part["demonstration"], by_part["train"]
    if train and not calibration:
        drawn = StableRandom(SEED).shuffle(train)
        count = min(CALIBRATION_SIZE, len(train) // 4)
        calibration, demonstration = drawn[:count], demonstration + drawn[count:]
    else:
        demonstration = demonstration + train

    def ordered(indexes: List[int]) -> Tuple[int, ...]:
        return tuple(StableRandom(SEED).shuffle(sorted(indexes)))
    return FixedSplit(how, parts, ordered(calibration), ordered(demonstration), ordered(by_part["test"]),
                      tuple(row_names))

#: warned by the ``change_*_triple`` methods: template edits belong to the prompt writer
TRIPLE_CHANGE_WARNING = ("We don't recommend to use these methods. Use the same method of the prompt writer "
                         "(dataset_interface.prompt_writter, e.g. experimentor.prompt_former) instead: it "
                         "edits the template the prompts are written with.")


class triplet_dataset:
    """The three parts of a dataset, drawn with the standard's generator.

    ``calibration = rows I[0:C]``, ``demonstration = I[C:C+D]``, ``test = I[C+D:C+D+T]`` with
    ``I = index_set(C+D+T, N)``.  A dataset with a :class:`FixedSplit` (``dataset.fixed_split``)
    is not drawn: its parts are the fixed ones, and a test size below the fixed test part's
    takes that part's first rows (see :func:`fixed_rows`).  Parts share row strings with
    the source (no deep copy).
    """

    def __init__(self, original_dataset: Dataset, calibration_number: Optional[int] = None,
                 demonstration_number: Optional[int] = None, test_number: Optional[int] = None,
                 seed: int = SEED, *, expected_test_number: Optional[int] = None) -> None:
        standard = original_dataset.split_sizes
        if standard is None and None in (calibration_number, demonstration_number, test_number):
            raise InvalidValueError(f"dataset {original_dataset.name!r} has no default split sizes: "
                                    "give calibration_number, demonstration_number and test_number")
        c = standard[0] if calibration_number is None else calibration_number
        d = standard[1] if demonstration_number is None else demonstration_number
        t = standard[2] if test_number is None else test_number
        at = f" (dataset {original_dataset.name!r})"
        c, d, t = (check_int(value, f"{label} size", minimum=0, at=at)
                   for label, value in (("calibration", c), ("demonstration", d), ("test", t)))
        if standard is not None:
            expected = (standard[0], standard[1], standard[2] if expected_test_number is None else expected_test_number)
            if (c, d, t) != expected:
                warn_tampering(f"split sizes {(c, d, t)} of {original_dataset.name} instead of {expected}")
        total = c + d + t
        fixed = getattr(original_dataset, "fixed_split", None)
        if fixed is not None:
            rows = fixed_rows(original_dataset, fixed, (c, d, t), seed)
        elif len(original_dataset) < total:
            raise InvalidValueError(f"The dataset {original_dataset.name} is too small ({len(original_dataset)}) "
                                    f"to split ({total}).")
        else:
            rows = original_dataset.draw_rows(total, seed)
        name = original_dataset.name
        self.name = name
        self.original_dataset = original_dataset
        self.calibration = original_dataset.with_rows(rows[:c], f"{name}-calibration")
        self.demonstration = original_dataset.with_rows(rows[c:c + d], f"{name}-demonstration")
        self.test = original_dataset.with_rows(rows[c + d:total], f"{name}-test")
        self._drawn = (c + d, total, seed)
        for part in self._parts():
            part.fixed_split = None  # a part is not split again

    # -- the original's attribute names --------------------------------------
    @property
    def dataset_name(self) -> str:
        return self.name

    @property
    def alternate_template(self) -> Optional[Dict[str, list]]:
        return self.original_dataset.alternate_template

    # -- read access ----------------------------------------------------------
    def get_label_space(self) -> List[str]:
        return self.demonstration.get_label_space()

    def get_dataset_name(self) -> str:
        return self.name

    def get_alternate_template(self) -> Optional[Dict[str, list]]:
        """The Template_sens alternatives of the dataset (a copy), or None."""
        return self.original_dataset.get_alternate_template()

    def _at(self) -> str:
        return f" (dataset {self.name!r})"

    def _test_index(self, index: Any) -> int:
        return check_int(index, "test index", minimum=0, maximum=len(self.test) - 1,
                         at=f" (dataset {self.name!r}, {len(self.test)} test items)")

    def get_default_ground_truth_label(self, index: int) -> str:
        """Label text of test item ``index``."""
        return self.test.get_label(self._test_index(index))

    def get_default_ground_truth_label_index(self, index: int) -> int:
        """Ground-truth label index of test item ``index``: position of its label text in the test label space."""
        return self.test.label_index(self._test_index(index))

    def test_row_ids(self) -> Optional[Tuple[Any, ...]]:
        """Each test item's own row id, in test order (None: not known, e.g. a test part edited by hand).

        A bundled dataset's id is the row's index in the original table; one's own data names a row by
        its id column (``id_column``) or where it sits in the file (line, or index of a record).
        """
        cached = self.__dict__.get("_test_row_ids", False)
        if cached is not False:
            return cached
        table = self.test.table
        if isinstance(table, DrawnSlice):
            ids: Sequence[Any] = table.table.table_indexes[table.start:table.stop]
        else:
            indexes = self._test_source_indexes()[:len(table)]
            names = getattr(self.original_dataset, "row_ids", None)
            ids = [names[i] for i in indexes] if names is not None else list(indexes)
        self._test_row_ids = tuple(ids) if len(ids) == len(table) else None
        return self._test_row_ids

    def _test_source_indexes(self) -> Sequence[int]:
        """The test rows' indexes in the original dataset's table (the split draw, or the fixed split)."""
        fixed = getattr(self.original_dataset, "fixed_split", None)
        if fixed is not None:
            return fixed.test
        start, total, seed = getattr(self, "_drawn", (0, -1, SEED))
        return StableRandom(seed).index_set(total, len(self.original_dataset))[start:] if total >= 0 else ()

    # -- template edits on all three parts (the prompt writer is the place for them) --
    def _parts(self) -> Tuple[Dataset, Dataset, Dataset]:
        return self.calibration, self.demonstration, self.test

    def _change_template_triple(self, field: str, value: Any) -> None:
        """Warn, then ask the parts to change ``field``: strict mode protects a dataset's default
        template, so each part refuses (one strict-mode warning) and nothing changes."""
        warn(TRIPLE_CHANGE_WARNING, stacklevel=4)
        warn_tampering(f"{field} change to {value!r} requested on the three parts of {self.name}", stacklevel=4)
        warn(STRICT_TEMPLATE_WARNING, stacklevel=4)

    def change_instruction_triple(self, instruction: str) -> None:
        self._change_template_triple("instruction", check_str(instruction, "instruction", at=self._at()))

    def change_input_text_prefixes_triple(self, prefixes: List[str]) -> None:
        prefixes = check_str_list(prefixes, "input_text_prefixes", at=self._at())
        self._change_template_triple("input_text_prefixes", prefixes)

    def change_input_text_affixes_triple(self, affixes: List[str]) -> None:
        affixes = check_str_list(affixes, "input_text_affixes", at=self._at())
        self._change_template_triple("input_text_affixes", affixes)

    def change_label_prefix_triple(self, label_prefix: str) -> None:
        self._change_template_triple("label_prefix", check_str(label_prefix, "label_prefix", at=self._at()))

    def change_label_affix_triple(self, label_affix: str) -> None:
        self._change_template_triple("label_affix", check_str(label_affix, "label_affix", at=self._at()))

    def change_query_prefix_triple(self, query_prefix: str) -> None:
        self._change_template_triple("query_prefix", check_str(query_prefix, "query_prefix", at=self._at()))

    def change_label_space_triple(self, label_space: List[str]) -> None:
        """Change the dataset label words of all three parts (not protected by strict mode, like the loaders').

        The words name the labels in the rows' label texts; label indexes, and so the
        ground truth, are unchanged.
        """
        at = self._at()
        space = check_label_space(label_space, at=at)
        expected = len(self.demonstration.label_space)
        if len(space) != expected:
            raise InvalidValueError(f"the label space needs {expected} words (one per label){at}, got {len(space)}")
        warn(TRIPLE_CHANGE_WARNING, stacklevel=3)
        warn_tampering(f"label space of the three parts of {self.name} changed to {space}")
        for part in self._parts():
            part.label_space = list(space)

    def __repr__(self) -> str:
        return (f"triplet_dataset({self.name!r}, calibration={len(self.calibration)}, "
                f"demonstration={len(self.demonstration)}, test={len(self.test)})")


def fixed_rows(dataset: Dataset, fixed: FixedSplit, sizes: Tuple[int, int, int], seed: int) -> List[Any]:
    """The rows of a fixed split's parts, calibration then demonstration then test (``sizes`` long).

    The calibration and demonstration parts are whole; the test part may be shortened to its
    first ``sizes[2]`` rows (a diagnosis's fixed test size, a smoke run), never lengthened.
    """
    c, d, t = sizes
    fixed_c, fixed_d, fixed_t = fixed.sizes
    at = f"dataset {dataset.name!r} has a {fixed.describe()}"
    if seed != SEED:
        raise InvalidValueError(f"{at}; it is not drawn, so a seed other than {SEED} does not apply")
    if (c, d) != (fixed_c, fixed_d) or t > fixed_t:
        raise InvalidValueError(f"{at}; its calibration and demonstration parts cannot be resized and at most {fixed_t} "
                                f"test items can be taken, got sizes {(c, d, t)}")
    indexes = fixed.calibration + fixed.demonstration + fixed.test[:t]
    return [dataset.table[i] for i in indexes]
