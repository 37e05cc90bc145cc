"""Triplet split: calibration, demonstration and test parts of one dataset."""
from typing import List, Optional

from .datasets import Dataset
from .errors import warn_tampering
from .standard import SEED
from .validation import check_int


class triplet_dataset:
    """The three parts of a dataset, drawn with the standard's generator.

    ``calibration = rows I[0:C]``, ``demonstration = I[C:C+D]``, ``test = I[C+D:C+D+T]`` with
    ``I = index_set(C+D+T, N)``.  Parts share row strings with the source (no deep copy).
    """

    def __init__(self, original_dataset: Dataset, calibration_number: Optional[int] = None,
                 demonstration_number: Optional[int] = None, test_number: Optional[int] = None,
                 seed: int = SEED, *, expected_test_number: Optional[int] = None) -> None:
        standard = original_dataset.split_sizes
        if standard is None and None in (calibration_number, demonstration_number, test_number):
            raise ValueError(f"dataset {original_dataset.name!r} has no default split sizes: "
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
        if len(original_dataset) < total:
            raise ValueError(f"The dataset {original_dataset.name} is too small ({len(original_dataset)}) "
                             f"to split ({total}).")
        rows = original_dataset.draw_rows(total, seed)
        name = original_dataset.name
        self.name = name
        self.original_dataset = original_dataset
        self.calibration = original_dataset.with_rows(rows[:c], f"{name}-calibration")
        self.demonstration = original_dataset.with_rows(rows[c:c + d], f"{name}-demonstration")
        self.test = original_dataset.with_rows(rows[c + d:total], f"{name}-test")

    def get_label_space(self) -> List[str]:
        return self.demonstration.get_label_space()

    def __repr__(self) -> str:
        return (f"triplet_dataset({self.name!r}, calibration={len(self.calibration)}, "
                f"demonstration={len(self.demonstration)}, test={len(self.test)})")
