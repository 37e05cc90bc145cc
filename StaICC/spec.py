"""The table of sub-benchmarks: what each one is, read by the metric registry, stats, reports, suite and CLI.

Every fact about a sub-benchmark that code elsewhere needs lives in one
:class:`SubBenchmarkSpec` row of :data:`SPECS`, so that no other module matches a
sub-benchmark's name to decide what to do:

- ``parts``: a compound sub-benchmark (Triplet_bias) lists its (result key, part name)
  pairs; its result is ``{key: part result}`` and its records carry the part names;
- ``metrics``: the registry names of the metrics it reports by default, in result order
  (their direction comes from :data:`StaICC.metrics.registry.METRICS`);
- ``result``: what a dataset's result looks like: ``"metrics"`` (a metric dict),
  ``"slopes"`` (``{"sensitivity": {metric: (slope, ...)}}``, regression over passes) or
  ``"sensitivity"`` (``{"sensitivity": {metric: value}}``, one value over every pass);
- ``averaging``: how the datasets are averaged: ``"mean"``, ``"slope"``, ``"sensitivity"``;
- ``test_size``, ``repeat_times``: the standard's test items per dataset (None: all) and R;
- ``procedure``: the passes (``"normal"``, ``"label_noise"``, ``"template"``,
  ``"demonstration_sensitivity"``), ``abscissae`` for the label-noise regression;
- ``pseudo_query``: ``"contextual"`` / ``"domain"`` for the bias diagnoses;
- ``consistency_loop``: consistency's loop length (the number of test items it spans);
- ``noisy_channel``: whether noisy-channel prompts are supported;
- ``in_standard_suite``: part of ``benchmarks="all"`` (in table order);
- ``bias_role``: what its mean prediction shows in the report's bias figure: ``"contextual"``,
  ``"domain"``, ``"post"`` (the test items themselves), or ``"post_fallback"`` (the same rows as
  ``"post"``, shown only when no bias diagnosis ran);
- ``agreement_raters``: what the raters of its per-factor agreement (kappa) table are, if it has one;
- ``scores_test_items``: its rows are scored predictions of the test items (the report's calibration
  table applies, and a task file's extra metrics are reported on it).

:func:`label_noise_rates` and :func:`label_noise_x_values` are the label-noise passes' rates and
the regression's x-values, computed once here for the engine, the statistics and the report.

Adding a sub-benchmark is a one-place change: add its row here (every reader picks it up:
``StaICC.metrics.get_metric(..., benchmark=)``, the statistics, the report, the suite and
``staicc run --benchmarks``), then, if it needs behaviour the generic
:class:`~StaICC.subbenchmarks.generic.SubBenchmark` does not have yet, a class in
:mod:`StaICC.subbenchmarks.builtin` whose ``spec = SPECS["Name"]`` (the class reads its name,
pseudo query, test size, repeat count, averaging and noisy-channel support from the row).
This module imports nothing but :mod:`StaICC.standard`, so any layer may read it.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from .errors import InvalidValueError
from .standard import (DEFAULT_REPEAT_TIMES, DEMO_SENS_REPEAT_TIMES, DEMO_SENS_TEST_SIZE,
                       TEMPLATE_SENS_TEST_SIZE)

SCORE_METRICS = ("accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1")
BIAS_METRICS = ("bias_entropy", "bias_distribution")


@dataclass(frozen=True)
class SubBenchmarkSpec:
    """One row of the table (see the module docstring for each field)."""

    name: str
    metrics: Tuple[str, ...] = SCORE_METRICS
    parts: Tuple[Tuple[str, str], ...] = ()
    result: str = "metrics"
    averaging: str = "mean"
    test_size: Optional[int] = None
    repeat_times: int = DEFAULT_REPEAT_TIMES
    procedure: str = "normal"
    abscissae: Optional[str] = None
    pseudo_query: Optional[str] = None
    consistency_loop: Optional[int] = None
    noisy_channel: bool = True
    in_standard_suite: bool = False
    bias_role: Optional[str] = None
    agreement_raters: Optional[str] = None
    scores_test_items: bool = False

    @property
    def compound(self) -> bool:
        return bool(self.parts)

    @property
    def has_slopes(self) -> bool:
        return self.result == "slopes"

    @property
    def has_consistency(self) -> bool:
        return self.consistency_loop is not None


_TABLE = (
    SubBenchmarkSpec("Normal", in_standard_suite=True, bias_role="post_fallback", scores_test_items=True),
    SubBenchmarkSpec("Triplet_bias", metrics=(), in_standard_suite=True,
                     parts=(("contextual", "Contextual_bias"), ("domain", "Domain_bias"), ("post", "Post_bias"))),
    SubBenchmarkSpec("Contextual_bias", metrics=BIAS_METRICS, pseudo_query="contextual", bias_role="contextual"),
    SubBenchmarkSpec("Domain_bias", metrics=BIAS_METRICS, pseudo_query="domain", bias_role="domain"),
    SubBenchmarkSpec("Post_bias", metrics=("post_bias_dl_div", "post_bias_distribution"), bias_role="post"),
    SubBenchmarkSpec("GLER", result="slopes", averaging="slope", procedure="label_noise", abscissae="standard",
                     in_standard_suite=True),
    SubBenchmarkSpec("GLER_corrected", result="slopes", averaging="slope", procedure="label_noise",
                     abscissae="correctness", noisy_channel=False),
    SubBenchmarkSpec("Template_sens", metrics=("consistency",), result="sensitivity", averaging="sensitivity",
                     test_size=TEMPLATE_SENS_TEST_SIZE, repeat_times=1, procedure="template",
                     consistency_loop=TEMPLATE_SENS_TEST_SIZE, noisy_channel=False, in_standard_suite=True,
                     agreement_raters="templates"),
    SubBenchmarkSpec("Demo_sens", metrics=("consistency",), result="sensitivity", averaging="sensitivity",
                     test_size=DEMO_SENS_TEST_SIZE, repeat_times=DEMO_SENS_REPEAT_TIMES,
                     procedure="demonstration_sensitivity", consistency_loop=DEMO_SENS_TEST_SIZE,
                     noisy_channel=False, in_standard_suite=True, agreement_raters="demonstration sets"),
    # diagnoses outside the standard (StaICC.subbenchmarks.extensions): never part of "all", their results are
    # marked non-standard; beside consistency they report the agreement metrics of StaICC.metrics.agreement
    SubBenchmarkSpec("Order_sens", metrics=("consistency",), result="sensitivity", averaging="sensitivity",
                     test_size=DEMO_SENS_TEST_SIZE, repeat_times=6, procedure="demonstration_order",
                     consistency_loop=DEMO_SENS_TEST_SIZE, noisy_channel=False, agreement_raters="demonstration orders"),
    SubBenchmarkSpec("Format_spread", metrics=("consistency",), result="sensitivity", averaging="sensitivity",
                     test_size=DEMO_SENS_TEST_SIZE, repeat_times=1, procedure="format_spread",
                     consistency_loop=DEMO_SENS_TEST_SIZE, noisy_channel=False),
)


def specs_by_name(rows: Tuple[SubBenchmarkSpec, ...]) -> Dict[str, SubBenchmarkSpec]:
    """The rows by name, in table order; a name given to two rows is refused (one would hide the other)."""
    found: Dict[str, SubBenchmarkSpec] = {}
    for row in rows:
        if row.name in found:
            raise InvalidValueError(f"the spec table names the sub-benchmark {row.name!r} twice; give each row "
                                    "its own name")
        found[row.name] = row
    return found


#: every sub-benchmark by name, in table order
SPECS: Dict[str, SubBenchmarkSpec] = specs_by_name(_TABLE)

#: what ``benchmarks="all"`` runs, in order
STANDARD_SUITE: Tuple[str, ...] = tuple(spec.name for spec in _TABLE if spec.in_standard_suite)
#: what a run asks when it names no sub-benchmark
DEFAULT_BENCHMARK = _TABLE[0].name
#: the bias figure's roles, in the order its bars are drawn
BIAS_ROLES: Tuple[str, ...] = ("contextual", "domain", "post", "post_fallback")
#: the sub-benchmarks the bias figure reads, in BIAS_ROLES order
BIAS_FIGURE_PARTS: Tuple[str, ...] = tuple(spec.name for role in BIAS_ROLES for spec in _TABLE
                                           if spec.bias_role == role)
#: (sub-benchmark, what its raters are) of the per-factor agreement table, in table order
AGREEMENT_FACTORS: Tuple[Tuple[str, str], ...] = tuple((spec.name, spec.agreement_raters) for spec in _TABLE
                                                       if spec.agreement_raters)
#: the sub-benchmarks whose rows are scored predictions of the test items
SCORE_PARTS: Tuple[str, ...] = tuple(spec.name for spec in _TABLE if spec.scores_test_items)


def label_noise_rates(passes: int) -> List[float]:
    """The label-noise rate of each of ``passes`` passes: 0, then adding 1 / (passes - 1), as the standard
    does (so at 10 passes the last rate is 1.0000000000000002 and the prompt writer refuses it)."""
    rates: List[float] = [0]
    for _ in range(1, passes):
        rates.append(rates[-1] + 1 / (passes - 1))
    return rates


def label_noise_x_values(passes: int, abscissae: str = "standard") -> List[float]:
    """The x-values the label-noise regression runs on: ``"standard"``, the standard's cumulative values
    (1, 0.75, 0.25, -0.5, -1.5 at 5 passes); ``"correctness"``, the label-correctness fractions 1 - rate."""
    if abscissae == "correctness":
        return [1 - r for r in label_noise_rates(passes)]
    xs: List[float] = [1]
    for i in range(1, passes):
        xs.append(xs[-1] - i / (passes - 1))
    return xs


def abscissae_of(name: str, procedure: Optional[Dict[str, Any]] = None) -> str:
    """The abscissae a label-noise result was regressed on: its recorded procedure's, else its row's."""
    recorded = (procedure or {}).get("abscissae")
    spec = SPECS.get(name)
    return recorded or (spec.abscissae if spec is not None else None) or "standard"


def parts_of(name: str) -> Tuple[Tuple[str, str], ...]:
    """(result key, part name) pairs: a compound's parts, or ``((name, name),)`` for a simple one."""
    spec = SPECS.get(name)
    return spec.parts if spec is not None and spec.parts else ((name, name),)


def part_names(name: str) -> Tuple[str, ...]:
    """The parts a run of ``name`` holds records of: a compound's parts, or ``name`` itself."""
    return tuple(part for _key, part in parts_of(name))


class Unfolded(NamedTuple):
    """One part of a sub-benchmark's entry: the sub-benchmark, the key its part is under, the part's name
    (a simple sub-benchmark is its own part, under its own name) and the part's value."""

    benchmark: str
    key: str
    part: str
    value: Any

    @property
    def compound(self) -> bool:
        return self.part != self.benchmark

    @property
    def compound_key(self) -> Tuple[str, ...]:
        """(sub-benchmark, key) for a compound's part; () for a simple sub-benchmark."""
        return (self.benchmark, self.key) if self.compound else ()

    @property
    def label(self) -> str:
        """``Triplet_bias/contextual`` for a compound's part, the name otherwise (what tables are titled)."""
        return "/".join(self.compound_key) or self.benchmark


def unfold(entries: Mapping[str, Any]) -> List[Unfolded]:
    """Every sub-benchmark of ``entries`` (a suite result, a results file's ``benchmarks``, a suite of
    sub-benchmarks), a compound one unfolded into its parts (its value's entries under the parts' keys;
    a part a mapping lacks is left out): the one place a compound is taken apart."""
    unfolded = []
    for name, value in entries.items():
        for key, part in parts_of(name):
            if part == name:
                unfolded.append(Unfolded(name, name, name, value))
            elif not isinstance(value, Mapping) or key in value:
                unfolded.append(Unfolded(name, key, part, value[key]))
    return unfolded


def reports_metric(name: str, metric: str) -> bool:
    """Whether ``name`` (or, for a compound, one of its parts) reports the registry metric ``metric``."""
    spec = SPECS.get(name)
    if spec is None:
        return False
    return metric in spec.metrics or any(reports_metric(part, metric) for _key, part in spec.parts)


def compound_of(part: str) -> Optional[Tuple[str, str]]:
    """(compound name, result key) when ``part`` is a part of a compound sub-benchmark, else None."""
    for spec in _TABLE:
        for key, name in spec.parts:
            if name == part:
                return spec.name, key
    return None
