"""Original path of the experimentors.

The original had one class per diagnosis; here one :class:`single_experimentor` is
parameterised by its procedure.  The original class names below build that experimentor
with the settings of the corresponding sub-benchmark, so code that constructed them
directly keeps working and gets the same numbers as the sub-benchmark.
"""
from typing import Any, List, Optional, Sequence

from ..engine.procedures import LabelNoiseProcedure, Procedure, SensitivityProcedure, TemplateProcedure
from ..subbenchmarks.experimentor import single_experimentor
from ..metrics import bias_metrics, consistency_metrics, post_bias_metrics
from ..standard import (DEFAULT_K, DEMO_SENS_REPEAT_TIMES, DEMO_SENS_TEST_SIZE, DOMAIN_QUERY_LENGTH,
                        GLER_INTERPOLATIONS, ORTHOGONAL_TABLE, TEMPLATE_SENS_TEST_SIZE)


class prior_bias_experimentor(single_experimentor):
    """Contextual (empty query) or domain (random in-domain words) prior-bias experimentor."""

    def __init__(self, triplet_dataset=None, original_dataset=None, k: int = DEFAULT_K, bias_type: str = "contextual",
                 domain_query_length: int = DOMAIN_QUERY_LENGTH, metrics=None, repeat_times: int = 2,
                 dividing: Optional[Sequence[int]] = None, noisy_channel: bool = False) -> None:
        super().__init__(triplet_dataset, original_dataset, k, metrics if metrics is not None else bias_metrics(),
                         repeat_times, dividing, noisy_channel, pseudo_query=bias_type,
                         domain_query_length=domain_query_length)
        self.bias_type = bias_type


class post_bias_experimentor(single_experimentor):
    """Ordinary prompts scored by the post-bias metrics (KL to the label frequencies, distribution)."""

    def __init__(self, triplet_dataset=None, original_dataset=None, k: int = DEFAULT_K, metrics=None,
                 repeat_times: int = 2, dividing: Optional[Sequence[int]] = None, noisy_channel: bool = False) -> None:
        super().__init__(triplet_dataset, original_dataset, k,
                         metrics if metrics is not None else post_bias_metrics(), repeat_times, dividing, noisy_channel)


class _PassResults(Procedure):
    """The passes of another procedure, summarised as the list of their metric dicts."""

    def __init__(self, inner: Procedure) -> None:
        self.inner = inner
        self.name = inner.name

    def passes(self):
        return self.inner.passes()

    def summarize(self, pass_results):
        return list(pass_results)

    def describe(self):
        return self.inner.describe()


class sensitivity_experimentor(single_experimentor):
    """Base of the sensitivity experimentors; on its own it runs one ordinary pass."""

    def inference_run(self, forward_inference, batched_inference: bool = False, _previous_prediction=False) -> List:
        """Run every pass and return the list of their metric dicts, without the summary ``auto_run`` adds."""
        procedure = self.procedure
        self.procedure = _PassResults(procedure)
        try:
            results = self.auto_run(forward_inference, None, batched_inference, False, _previous_prediction or None)[0]
        finally:
            self.procedure = procedure
        return results

    def __init__(self, triplet_dataset=None, original_dataset=None, k: int = DEFAULT_K,
                 sensitivity_test: int = GLER_INTERPOLATIONS, metrics=None, repeat_times: int = 2,
                 dividing: Optional[Sequence[int]] = None, noisy_channel: bool = False, **options: Any) -> None:
        super().__init__(triplet_dataset, original_dataset, k, metrics, repeat_times, dividing, noisy_channel, **options)
        self.sensitivity_test = sensitivity_test


class GLER_experimentor(sensitivity_experimentor):
    """Label-noise sensitivity: ``sensitivity_test`` passes at noise rates 0 .. 1, then a regression per metric."""

    def __init__(self, triplet_dataset=None, original_dataset=None, k: int = DEFAULT_K,
                 sensitivity_test: int = GLER_INTERPOLATIONS, metrics=None, repeat_times: int = 2,
                 dividing: Optional[Sequence[int]] = None, noisy_channel: bool = False) -> None:
        super().__init__(triplet_dataset, original_dataset, k, sensitivity_test, metrics, repeat_times, dividing,
                         noisy_channel, procedure=LabelNoiseProcedure(sensitivity_test))


class template_sensitivity_experimentor(sensitivity_experimentor):
    """Consistency of predictions over the templates of an orthogonal table (100 test items, one repeat)."""

    def __init__(self, triplet_dataset=None, original_dataset=None, k: int = DEFAULT_K, metrics=None,
                 repeat_times: int = 1, dividing: Optional[Sequence[int]] = None,
                 orthogonal_table: Sequence[Sequence[int]] = ORTHOGONAL_TABLE) -> None:
        dataset = triplet_dataset.demonstration if triplet_dataset is not None else original_dataset
        templates = getattr(dataset, "alternate_template", None)
        super().__init__(triplet_dataset, original_dataset, k, len(orthogonal_table),
                         metrics if metrics is not None else consistency_metrics(TEMPLATE_SENS_TEST_SIZE),
                         repeat_times, dividing, False, procedure=TemplateProcedure(templates, orthogonal_table),
                         test_size=TEMPLATE_SENS_TEST_SIZE, standard_repeat_times=1)


class demonstration_sensitivity_experimentor(sensitivity_experimentor):
    """Consistency of predictions over 8 demonstration sets per query (first 128 test items)."""

    def __init__(self, triplet_dataset=None, original_dataset=None, k: int = DEFAULT_K, metrics=None,
                 repeat_times: int = DEMO_SENS_REPEAT_TIMES, dividing: Optional[Sequence[int]] = None,
                 sensitivity_test: int = DEMO_SENS_REPEAT_TIMES) -> None:
        super().__init__(triplet_dataset, original_dataset, k, sensitivity_test,
                         metrics if metrics is not None else consistency_metrics(DEMO_SENS_TEST_SIZE),
                         repeat_times, dividing, False, procedure=SensitivityProcedure(),
                         test_size=DEMO_SENS_TEST_SIZE, standard_repeat_times=DEMO_SENS_REPEAT_TIMES)
