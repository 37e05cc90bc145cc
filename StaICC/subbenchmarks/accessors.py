"""The experimentor's read-only accessors, kept apart from the run logic they do not touch.

They carry the original's names and are part of ``single_experimentor``'s public surface,
which the package itself reads too (the retrievers, the calibrations, the prompt edits), so
they live with the experimentor rather than in :mod:`StaICC.legacy`.  Each reads the
triplet, the demonstrations or the prompt writer and changes nothing (``add_metric`` adds
to the metric dict).
"""
from typing import Callable, List

from ..errors import InvalidTypeError


class OriginalAccessors:
    """``demonstration_set()``, ``get_k()``, ``example()`` ... as the original named them."""

    def demonstration_set(self):
        return self.triplet_dataset.demonstration

    def test_set(self):
        return self.triplet_dataset.test

    def calibration_set(self):
        return self.triplet_dataset.calibration

    def get_label_space(self) -> List[str]:
        return self.prompt_former.get_label_space()

    def get_k(self) -> int:
        return self.k

    def get_repeat_times(self) -> int:
        return self.repeat_times

    def example(self, k: int = 8):
        return self.prompt_former.example(k)

    def get_prompt_writter_from_dataline(self):
        """The writer's ``write_prompt_from_dataline`` (demonstration lines, query inputs) -> prompt."""
        return self.prompt_former.write_prompt_from_dataline

    def add_metric(self, name: str, metric: Callable) -> None:
        if not isinstance(name, str) or not callable(metric):
            raise InvalidTypeError("add_metric expects a name (str) and a callable metric(ground_truth, prediction)")
        self.metrics[name] = metric

    def __repr__(self) -> str:
        return (f"single_experimentor({self.dataset_name!r}, k={self.k}, queries={len(self)}, "
                f"procedure={self.procedure.name!r})")
