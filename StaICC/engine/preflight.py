"""Checks that run before any inference: a run that cannot finish must fail before it asks the model.

Each check is O(1) in k and in the dataset size (no sampler is drawn, no prompt written),
and its error names the dataset and what to change.
"""
from ..errors import InvalidValueError, where
from ..metrics import expected_calibration_error_1
from ..standard import ECE_BINS


def check_experimentor(experimentor) -> None:
    """k against the demonstration set, the pseudo query's source, the metrics' minimum sizes."""
    name = experimentor.dataset_name
    triplet = experimentor.triplet_dataset
    D = len(triplet.demonstration)
    if experimentor.demonstrations.uses_default_rows and experimentor.k > D:
        raise InvalidValueError(f"k = {experimentor.k} is larger than the demonstration set ({D} rows){where(name)}: "
                                "use k <= D (the original returned all-zero results here)")
    if experimentor.pseudo_query == "domain" and D == 0:
        raise InvalidValueError(f"Domain_bias draws its pseudo queries from the demonstration set, which is empty"
                                f"{where(name)}; give the split a demonstration part")
    if experimentor.pseudo_query == "contextual" and len(triplet.calibration) == 0:
        raise InvalidValueError(f"Contextual_bias reads the input layout from the calibration set, which is empty"
                                f"{where(name)}; give the split a calibration part")
    queries = experimentor.test_count() * experimentor.repeat_times
    if queries == 0:
        raise InvalidValueError(f"the test set is empty{where(name)}; nothing to evaluate")
    if expected_calibration_error_1 in experimentor.metrics.values() and queries < ECE_BINS:
        limited = experimentor.test_count() < len(triplet.test)
        least = -(-ECE_BINS // experimentor.repeat_times)
        fix = (f"evaluate at least {least} test items (--limit {least}, --lite-items {least} or a larger --lite)"
               if limited else "give the split a larger test part")
        raise InvalidValueError(f"{experimentor.test_count()} test rows x {experimentor.repeat_times} repeats = {queries} "
                                f"queries{where(name)}, but the expected calibration error needs at least {ECE_BINS} (one "
                                f"per confidence bin); {fix}")
