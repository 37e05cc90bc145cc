"""Triplet split: calibration, demonstration and test parts of one dataset."""
from typing import Any, Dict, List, Optional, Tuple

from . import Dataset
from ..errors import warn, warn_tampering
from ..standard import SEED, STRICT_TEMPLATE_WARNING
from ..validation import check_int, check_label_space, check_str, check_str_list

#: warned by the ``change_*_triple`` methods: template edits belong to the prompt writer
TRIPLE_CHANGE_WARNING = ("We don't recommend to use these methods. Use the same method of the prompt writer "
                         "(dataset_interface.prompt_writter, e.g. experimentor.prompt_former) instead: it "
                         "edits the template the prompts are written with.")


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
            raise ValueError(f"the label space needs {expected} words (one per label){at}, got {len(space)}")
        warn(TRIPLE_CHANGE_WARNING, stacklevel=3)
        warn_tampering(f"label space of the three parts of {self.name} changed to {space}")
        for part in self._parts():
            part.label_space = list(space)

    def __repr__(self) -> str:
        return (f"triplet_dataset({self.name!r}, calibration={len(self.calibration)}, "
                f"demonstration={len(self.demonstration)}, test={len(self.test)})")
