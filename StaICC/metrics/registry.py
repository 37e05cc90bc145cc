"""The metric registry: what each metric reads and reports, and the metric sets of the sub-benchmarks.

:data:`METRICS` describes every metric of the standard (what it reads, which direction
is better, how to display it, under which key the sub-benchmarks report it);
:func:`get_metric` finds one by name, original alias or result key.  Tables, reports
and the statistics read it instead of hard-coding metric names.
"""
from typing import Callable, Dict, NamedTuple, Optional, Tuple

from ..errors import InvalidValueError, UnknownNameError
from ..standard import CONSISTENCY_LOOP_LENGTH
from ..spec import SPECS
from .bias import bias_distribution, bias_entropy, post_bias_distribution, post_bias_dl_div
from .calibration_metrics import (CALIBRATION_METRICS, brier_score, classwise_ece,  # noqa: F401  (re-exported)
                                  coverage_accuracy_area, ece_equal_mass_1, ece_equal_mass_10, ece_platt,
                                  selective_accuracy)
from .scores import (accuracy, averaged_truelabel_likelihood, consistency, expected_calibration_error_1, macro_F1,
                     make_consistency, own_ece_nonstandard, own_likelihood_nonstandard)


def normal_metrics() -> Dict[str, Callable]:
    return {"accuracy": accuracy, "averaged_truelabel_likelihood": averaged_truelabel_likelihood,
            "macro_F1": macro_F1, "expected_calibration_error_1": expected_calibration_error_1}


def bias_metrics() -> Dict[str, Callable]:
    return {"entropy": bias_entropy, "distribution": bias_distribution}


def post_bias_metrics() -> Dict[str, Callable]:
    return {"DL div.": post_bias_dl_div, "distribution": post_bias_distribution}


def consistency_metrics(loop_length: int = CONSISTENCY_LOOP_LENGTH) -> Dict[str, Callable]:
    return {"consistency": make_consistency(loop_length)}


#: the standard metrics that read probabilities after its exact-sum rule, and their counterparts on the
#: model's own distribution (softmaxed once), which ``staicc run`` reports beside them
OWN_DISTRIBUTION_METRICS: Dict[str, str] = {"averaged_truelabel_likelihood": "own_likelihood_nonstandard",
                                            "expected_calibration_error_1": "own_ece_nonstandard"}


def with_own_distribution_metrics(metrics: Dict[str, Callable]) -> Dict[str, Callable]:
    """``metrics`` plus the own-distribution counterpart of each standard likelihood or ECE it holds
    (the standard's functions, under their result keys), each after the standard metrics."""
    extra = {own: METRICS[own].function for name, own in OWN_DISTRIBUTION_METRICS.items()
             if metrics.get(name) is METRICS[name].function}
    return {**metrics, **extra}


# ----------------------------------------------------------------------------
# the metric registry
# ----------------------------------------------------------------------------
class MetricInfo(NamedTuple):
    """What tables, reports and statistics need to know about a metric.

    ``needs`` is ``"labels"`` when only each row's argmax matters (int predictions lose
    nothing) and ``"probabilities"`` when the values themselves are read.
    ``higher_is_better`` is None for vector-valued metrics, which have no direction.
    ``result_key`` is the key under which the sub-benchmarks report the metric.
    """

    name: str
    function: Callable
    needs: str
    higher_is_better: Optional[bool]
    display_name: str
    result_key: str
    vector_valued: bool = False
    softmaxed: bool = True
    aliases: Tuple[str, ...] = ()


METRICS: Dict[str, MetricInfo] = {info.name: info for info in (
    MetricInfo("accuracy", accuracy, "labels", True, "Accuracy", "accuracy"),
    MetricInfo("averaged_truelabel_likelihood", averaged_truelabel_likelihood, "probabilities", True,
               "True-label likelihood", "averaged_truelabel_likelihood"),
    MetricInfo("macro_F1", macro_F1, "labels", True, "Macro-F1", "macro_F1"),
    MetricInfo("expected_calibration_error_1", expected_calibration_error_1, "probabilities", False,
               "ECE (10 bins)", "expected_calibration_error_1"),
    MetricInfo("consistency", consistency, "labels", True, "Consistency", "consistency"),
    MetricInfo("bias_entropy", bias_entropy, "probabilities", True, "Prior entropy", "entropy",
               softmaxed=False, aliases=("bias_mean_entropy_metric",)),
    MetricInfo("bias_distribution", bias_distribution, "probabilities", None, "Mean prediction", "distribution",
               vector_valued=True, softmaxed=False, aliases=("bias_mean_metric",)),
    MetricInfo("post_bias_dl_div", post_bias_dl_div, "probabilities", False, "KL to label frequencies", "DL div.",
               softmaxed=False, aliases=("post_bias_dl_metric",)),
    MetricInfo("post_bias_distribution", post_bias_distribution, "probabilities", None,
               "Mean prediction - label frequencies", "distribution", vector_valued=True, softmaxed=False,
               aliases=("post_bias_dis_metric",)),
    # calibration metrics outside the standard: no sub-benchmark reports them by default
    MetricInfo("brier_score", brier_score, "probabilities", False, "Brier score", "brier_score"),
    MetricInfo("ece_equal_mass_1", ece_equal_mass_1, "probabilities", False, "ECE (1 bin)", "ece_equal_mass_1"),
    MetricInfo("ece_equal_mass_10", ece_equal_mass_10, "probabilities", False, "ECE (10 equal-mass bins)",
               "ece_equal_mass_10"),
    MetricInfo("classwise_ece", classwise_ece, "probabilities", False, "Classwise ECE", "classwise_ece"),
    MetricInfo("selective_accuracy", selective_accuracy, "probabilities", True, "Selective accuracy (top 10%)",
               "selective_accuracy"),
    MetricInfo("coverage_accuracy_area", coverage_accuracy_area, "probabilities", True, "Coverage-accuracy area",
               "coverage_accuracy_area"),
    MetricInfo("ece_platt", ece_platt, "probabilities", False, "ECE after Platt scaling", "ece_platt"),
    # the standard's likelihood and ECE on the model's own distribution (softmaxed once), beside the standard's
    MetricInfo("own_likelihood_nonstandard", own_likelihood_nonstandard, "probabilities", True,
               "True-label likelihood, model's own distribution (non-standard)", "own_likelihood_nonstandard",
               softmaxed=False),
    MetricInfo("own_ece_nonstandard", own_ece_nonstandard, "probabilities", False,
               "ECE (10 bins), model's own distribution (non-standard)", "own_ece_nonstandard", softmaxed=False),
)}

#: the metrics each sub-benchmark reports by default, by registry name, in result order (from the spec table)
BENCHMARK_METRICS: Dict[str, Tuple[str, ...]] = {s.name: s.metrics for s in SPECS.values() if not s.compound}


#: consistency's loop length in the sub-benchmarks that report it (the number of test items)
CONSISTENCY_LOOP_LENGTHS: Dict[str, int] = {s.name: s.consistency_loop for s in SPECS.values()
                                            if s.consistency_loop is not None}


def get_metric(name: str, benchmark: Optional[str] = None) -> MetricInfo:
    """The registry entry for a metric name, an original alias, or a result key.

    Result keys are not unique ("distribution" is reported by both bias benchmarks and
    Post_bias, with different functions), so a result key is looked up among the
    metrics of ``benchmark`` when one is given.  Consistency depends on a loop length:
    ``consistency_<L>`` and consistency looked up for Template_sens or Demo_sens give an
    entry whose ``function`` is bound to that length, so ``function(truth, rows)``
    recomputes the reported value.
    """
    info = _find_metric(name, benchmark)
    if info.name == "consistency":
        suffix = name[len("consistency_"):] if name.startswith("consistency_") else ""
        spec = SPECS.get(benchmark or "")
        length = int(suffix) if suffix.isdigit() else (spec.consistency_loop if spec is not None else None)
        if length is not None:
            return info._replace(function=make_consistency(length))
    return info


def _find_metric(name: str, benchmark: Optional[str]) -> MetricInfo:
    if benchmark is not None:
        spec = SPECS.get(benchmark)
        if spec is None or spec.compound:
            known = ", ".join(s.name for s in SPECS.values() if not s.compound)
            raise InvalidValueError(f"unknown sub-benchmark {benchmark!r}; known: {known}")
        candidates = [METRICS[n] for n in spec.metrics]
    else:
        candidates = list(METRICS.values())
    for info in candidates:
        if name == info.name or name in info.aliases:
            return info
    matches = [info for info in candidates if info.result_key == name]
    if len(matches) == 1:
        return matches[0]
    if name.startswith("consistency_") and name[len("consistency_"):].isdigit():
        return METRICS["consistency"]
    if len(matches) > 1:
        raise InvalidValueError(f"the result key {name!r} is reported by several metrics "
                                f"({', '.join(m.name for m in matches)}); pass benchmark= to choose")
    known = sorted(n for info in candidates for n in (info.name, info.result_key) + info.aliases)
    where_ = f" in {benchmark}" if benchmark else ""
    raise UnknownNameError(f"unknown metric {name!r}{where_}; known: {', '.join(sorted(set(known)))}")


def higher_is_better(name: str, benchmark: Optional[str] = None) -> Optional[bool]:
    """True/False for scalar metrics, None for vector-valued ones (see :func:`get_metric`)."""
    return get_metric(name, benchmark).higher_is_better
