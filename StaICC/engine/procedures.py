"""What one experimentor run does: its passes over the queries and how their metrics are summarised.

A pass is a frozen :class:`PassSpec`: the label-noise rate (GLER) or template
(Template_sens) of that sweep, which it turns into the sweep's frozen template, and whether the metrics see the predictions of the earlier
passes too (Template_sens's consistency spans its nine templates).  Normal, the bias
diagnoses, GLER, Template_sens and Demo_sens differ only in their procedure.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..metrics import linear_regression
from ..prompt.source import applied_template, with_label_wrong_rate
from ..prompt.template import Template
from ..spec import label_noise_rates, label_noise_x_values
from ..standard import GLER_INTERPOLATIONS, ORTHOGONAL_TABLE, TEMPLATE_KEYS
from ..validation import check_choice, Integer

TemplateItems = Tuple[Tuple[str, Any], ...]


@dataclass(frozen=True)
class PassSpec:
    """One sweep over all queries; ``None`` fields leave the template as it is."""

    label_noise_rate: Optional[float] = None
    template: Optional[TemplateItems] = None
    template_row: Optional[int] = None
    carry: bool = False

    def template_for(self, base: Template, triplet: Any) -> Template:
        """This pass's template, a new frozen value: ``base`` (the writer's) with what the pass names.

        A template row replaces ``base`` by the dataset's standard template with that row's
        fields; a label-noise rate is then set on it (a rate outside [0, 1] is refused here,
        when the run is planned).
        """
        template = base
        if self.template is not None:
            template = applied_template(triplet, dict(self.template))
        if self.label_noise_rate is not None:
            template = with_label_wrong_rate(template, self.label_noise_rate)
        return template

    def describe(self) -> str:
        if self.label_noise_rate is not None:
            return f"label noise {self.label_noise_rate:.2f}"
        if self.template_row is not None:
            return f"template {self.template_row + 1}"
        return ""


class Procedure:
    """A single pass whose metric dict is the result (Normal, the bias diagnoses)."""

    name = "normal"

    def passes(self) -> List[PassSpec]:
        return [PassSpec()]

    def summarize(self, pass_results: List[Dict[str, Any]]) -> Dict[str, Any]:
        return pass_results[0]

    def describe(self) -> Dict[str, Any]:
        return {"procedure": self.name}


class SensitivityProcedure(Procedure):
    """Demo_sens: one pass, reported as ``{"sensitivity": result}``."""

    name = "demonstration_sensitivity"

    def summarize(self, pass_results):
        return {"sensitivity": pass_results[-1]}


#: the most label-noise rates GLER accepts: far more than a regression needs, far less than memory allows
MAX_INTERPOLATIONS = 1000


class LabelNoiseProcedure(Procedure):
    """GLER: passes at label-noise rates 0 .. 1, then a regression of each metric on x.

    The rates are accumulated by adding 1 / (n - 1), as the standard does (so at n = 10
    the last rate is 1.0000000000000002 and the writer refuses it).  ``abscissae="standard"``
    regresses on the standard's cumulative x-values (1, 0.75, 0.25, -0.5, -1.5 at n = 5);
    ``"correctness"`` on the label-correctness fractions 1 - rate, which is what the
    published definition means (not the standard).
    """

    name = "label_noise"

    def __init__(self, interpolations: int = GLER_INTERPOLATIONS, abscissae: str = "standard") -> None:
        refusal, interpolations = Integer(2).judge(interpolations)
        if refusal is not None:  # the original's words and built-in ValueError
            raise ValueError(f"The sensitivity test should be larger than 1: interpolations = {interpolations!r}")
        if interpolations > MAX_INTERPOLATIONS:  # refused up front: each one is a pass over every query
            raise InvalidValueError(f"interpolations must be at most {MAX_INTERPOLATIONS} (each is a full pass over every "
                                    f"query; the standard uses {GLER_INTERPOLATIONS}), got {interpolations}")
        self.interpolations = interpolations
        self.abscissae = check_choice(abscissae, "abscissae", ("standard", "correctness"))

    def rates(self) -> List[float]:
        return label_noise_rates(self.interpolations)

    def x_values(self) -> List[float]:
        return label_noise_x_values(self.interpolations, self.abscissae)

    def passes(self):
        return [PassSpec(label_noise_rate=rate) for rate in self.rates()]

    def summarize(self, pass_results):
        result: Dict[str, Any] = {str(i): r for i, r in enumerate(pass_results)}
        xs = self.x_values()
        result["sensitivity"] = {metric: linear_regression(xs, [r[metric] for r in pass_results])
                                 for metric in pass_results[0]}
        return result

    def describe(self):
        return {"procedure": self.name, "interpolations": self.interpolations, "abscissae": self.abscissae}


class TemplateProcedure(Procedure):
    """Template_sens: one pass per row of the L9 orthogonal table, consistency over all of them."""

    name = "template_sensitivity"

    def __init__(self, alternate_template: Dict[str, list], table: Sequence[Sequence[int]] = ORTHOGONAL_TABLE) -> None:
        if not alternate_template:
            raise InvalidValueError("Template_sens needs the dataset's alternate templates")
        self.templates = [{key: alternate_template[key][row[c]] for c, key in enumerate(TEMPLATE_KEYS)}
                          for row in table]

    def passes(self):
        return [PassSpec(template=tuple((key, tuple(v) if isinstance(v, list) else v) for key, v in t.items()),
                         template_row=i, carry=True)
                for i, t in enumerate(self.templates)]

    def summarize(self, pass_results):
        return {"sensitivity": pass_results[-1]}

