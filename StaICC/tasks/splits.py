"""A task's split table: sizes of a drawn split, or a split fixed by the data.

``split.calibration`` / ``split.demonstration`` / ``split.test`` size a split drawn by the
standard's generator; ``split.column`` (with ``split.values``), ``split.files`` or
``split.id_column`` with ``split.test_ids`` fix it instead (one way at a time), and then
the sizes come from the data.  The checks here name the task key; the rows themselves are
checked by :mod:`StaICC.custom_datasets` as they are read.
"""
from typing import Any, Dict, Optional, Tuple

from ..datasets import Dataset
from .errors import TaskError
from .schema import TaskConfig

#: the split keys that fix the split instead of sizing a drawn one
FIXED_SPLIT_KEYS = ("column", "values", "files", "id_column", "test_ids")


def split_options(config: TaskConfig, path: str) -> Dict[str, Any]:
    """The builder's split options: a fixed split's, or ``split_sizes`` (left to the caller: de-duplication
    recomputes them), checked against each other."""
    fixed = _fixed_split_options(config, path)
    if fixed and split_sizes(config, path) is not None:
        raise TaskError("the split is fixed by the data, so its sizes come from the data; leave split.calibration, "
                        "split.demonstration and split.test out", path=path,
                        key="split." + next(p for p in ("calibration", "demonstration", "test")
                                            if getattr(config.split, p) is not None))
    return fixed


def check_one_way(config: TaskConfig, path: str) -> None:
    """A split is fixed one way: by a column, by files, or by test ids."""
    ways = [key for key in ("column", "files", "test_ids") if getattr(config.split, key) is not None]
    if len(ways) > 1:
        raise TaskError(f"split.{ways[0]} and split.{ways[1]} both fix the split; give one", path=path,
                        key=f"split.{ways[1]}")


def _fixed_split_options(config: TaskConfig, path: str) -> Dict[str, Any]:
    """The builder's fixed-split options: a split column or test ids; nothing for a drawn split or for
    ``split.files`` (the files are the source, read by ``from_files``)."""
    split = config.split
    check_one_way(config, path)
    if split.values is not None and split.column is None:
        raise TaskError("split.values maps the values of split.column; give split.column too", path=path,
                        key="split.values")
    if (split.id_column is None) != (split.test_ids is None):
        missing = "split.id_column" if split.id_column is None else "split.test_ids"
        raise TaskError("split.test_ids names rows by the values of split.id_column; give both", path=path,
                        key=missing)
    if split.column is not None:
        return {"split_column": split.column, "split_values": split.values}
    if split.test_ids is not None:
        return {"id_column": split.id_column, "test_ids": list(split.test_ids)}
    return {}


def split_sizes(config: TaskConfig, path: str) -> Optional[Tuple[int, int, int]]:
    """The drawn split's (calibration, demonstration, test) sizes the task gives: all three or none."""
    given = [getattr(config.split, part) for part in ("calibration", "demonstration", "test")]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        missing = [p for p, v in zip(("calibration", "demonstration", "test"), given) if v is None][0]
        raise TaskError("give all three split sizes (calibration, demonstration, test) or none", path=path,
                        key=f"split.{missing}")
    return given[0], given[1], given[2]


def deduplicated_fixed(dataset: Dataset) -> Dataset:
    """A fixed split without the other parts' rows whose inputs repeat a test row or an earlier row.

    The test rows stay exactly as given (they are what the paper names); a duplicate among
    the demonstrations of a test query is what de-duplication removes.
    """
    from ..datasets.split import fix_split
    fixed = dataset.fixed_split
    seen = {tuple(dataset.table[i][0]) for i in fixed.test}
    keep = []
    for index, (inputs, _raw) in enumerate(dataset.table):
        key = tuple(inputs)
        if fixed.row_parts[index] == "test":
            keep.append(index)
        elif key not in seen:
            seen.add(key)
            keep.append(index)
    names = [fixed.row_names[i] for i in keep] if fixed.row_names else ()
    refixed = fix_split([fixed.row_parts[i] for i in keep], fixed.how, names)
    kept = dataset.with_rows([dataset.table[i] for i in keep], dataset.name)
    kept.fixed_split, kept.split_sizes = refixed, refixed.sizes
    kept.departures = ["custom dataset", refixed.describe()]  # type: ignore[attr-defined]
    kept.deduplicated = len(dataset) - len(keep)  # type: ignore[attr-defined]
    return kept
