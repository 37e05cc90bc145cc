"""Metrics of the standard, as plain functions over plain lists, and their registry.

Every metric has the signature ``metric(ground_truth, prediction) -> value`` with
``ground_truth`` a list of label indexes and ``prediction`` a list of rows (one
probability/logit vector per query).  :data:`METRICS` describes each of them (what it
reads, which direction is better, how to display it); :func:`get_metric` finds one by name.

The package is split by job; every name is importable from ``StaICC.metrics`` itself:

- :mod:`StaICC.numeric` (re-exported here): the elementary operations (left-to-right sums, softmax, argmax and
  argmin, the exact probability checks, column means, entropy, linear regression);
- :mod:`.scores`: the score metrics (accuracy, likelihood, macro-F1, ECE, consistency)
  and their formulas on per-row summaries, shared with :mod:`StaICC.stats`;
- :mod:`.calibration_metrics`: calibration metrics outside the standard (Brier,
  equal-mass and classwise ECE, selective accuracy, ECE after Platt scaling);
- :mod:`.bias`: the prior and posterior bias metrics;
- :mod:`.exact_sum`: what a run's rows are (``prediction_kind``), the branch of the exact-sum
  rule they take, and when that branch rests on rounding;
- :mod:`.registry`: :class:`MetricInfo`, :data:`METRICS`, :func:`get_metric`, and the
  metric sets of the sub-benchmarks (:func:`normal_metrics`, ...).

The original's helper functions (``StaICC.util.functional``) live in :mod:`StaICC.legacy.functional`.

Only the standard library and :mod:`StaICC.standard` / :mod:`StaICC.errors` are imported.
"""
from .bias import bias_distribution, bias_entropy, post_bias_distribution, post_bias_dl_div
from ..numeric import (Matrix, PredictionRows, Vector, argmax, argmin, column_means, entropy, is_probability_matrix,
                      is_probability_vector, linear_regression, sequential_sum, softmax, softmax_unless_probabilities)
from .calibration_metrics import (brier_score, classwise_ece, coverage_accuracy_area, ece_equal_mass_1,
                                  ece_equal_mass_10, ece_platt, selective_accuracy)
from .registry import (BENCHMARK_METRICS, CALIBRATION_METRICS, CONSISTENCY_LOOP_LENGTHS, METRICS,
                       OWN_DISTRIBUTION_METRICS, MetricInfo, bias_metrics, consistency_metrics, get_metric,
                       higher_is_better, normal_metrics, post_bias_metrics, with_own_distribution_metrics)
from .exact_sum import PREDICTION_KINDS, RowRule, check_prediction_kind, own_distribution
from .scores import (accuracy, accuracy_from_labels, averaged_truelabel_likelihood, consistency,
                     consistency_from_labels, ece_bin, ece_from_confidence, expected_calibration_error_1, macro_F1,
                     macro_f1_from_labels, make_consistency, own_ece_nonstandard, own_likelihood_nonstandard,
                     single_consistency)

__all__ = [
    # numeric
    "Vector", "Matrix", "sequential_sum", "argmax", "argmin", "is_probability_vector", "is_probability_matrix",
    "softmax", "PredictionRows", "softmax_unless_probabilities", "column_means", "entropy", "linear_regression",
    # scores
    "accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1", "consistency",
    "accuracy_from_labels", "macro_f1_from_labels", "ece_bin", "ece_from_confidence", "consistency_from_labels",
    "make_consistency", "single_consistency",
    # the model's own distribution (outside the standard) and what rows are
    "own_likelihood_nonstandard", "own_ece_nonstandard", "own_distribution", "OWN_DISTRIBUTION_METRICS",
    "with_own_distribution_metrics", "PREDICTION_KINDS", "RowRule", "check_prediction_kind",
    # calibration (outside the standard)
    "brier_score", "ece_equal_mass_1", "ece_equal_mass_10", "classwise_ece", "selective_accuracy",
    "coverage_accuracy_area", "ece_platt", "CALIBRATION_METRICS",
    # bias
    "bias_distribution", "bias_entropy", "post_bias_distribution", "post_bias_dl_div",
    # registry
    "normal_metrics", "bias_metrics", "post_bias_metrics", "consistency_metrics", "MetricInfo", "METRICS",
    "BENCHMARK_METRICS", "CONSISTENCY_LOOP_LENGTHS", "get_metric", "higher_is_better",
]
