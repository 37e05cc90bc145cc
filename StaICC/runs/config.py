"""What one run is: a frozen :class:`RunConfig`, the same for ``staicc run`` and a notebook.

``staicc run`` resolves its arguments into one (:func:`StaICC.cli.run_config.resolve_config`,
every argument checked before any model loads); a notebook writes one directly::

    >>> from StaICC.runs import RunConfig
    >>> config = RunConfig(model="reference", benchmarks="Normal", datasets=("TREC",))
    >>> (config.model, config.k, config.benchmarks)
    ('reference', 4, 'Normal')

Nothing is built here: :func:`StaICC.runs.prepare` builds the sub-benchmarks and the
backend from it, :func:`StaICC.runs.execute` runs it.
"""
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple

from ..engine.selection import AnswerPolicy, Everything, Nothing, QuerySubset, Selection, Shard
from ..standard import DEFAULT_K


@dataclass(frozen=True)
class CostOptions:
    """What a dry run's cost estimate is asked for: a peak (FLOP/s, and what it is) and prices (dollars per million
    tokens); ``staicc run``'s ``--device-flops``, ``--device-peak`` and ``--price-per-mtok``."""

    peak: Optional[float] = None
    peak_name: str = ""
    price_input: Optional[float] = None
    price_output: Optional[float] = None


@dataclass(frozen=True)
class LiteOptions:
    """A lite run's statistics as a notebook's ``run_lite`` chooses them: its intervals' bootstrap resamples,
    seed and level (None: the statistics' defaults, as ``staicc run --lite`` takes them), and whether the full
    run's prompts are counted (one more dry run, no inference) to say what the lite run saves."""

    resamples: Optional[int] = None
    seed: Optional[int] = None
    level: Optional[float] = None
    full_counts: bool = True


@dataclass(frozen=True)
class RunConfig:
    """Everything one run does: the model, what it asks, where its answers and files go."""

    model: str = "reference"
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)  # the backend's keyword arguments
    recorded_arguments: Optional[Mapping[str, Any]] = field(default=None, hash=False)  # as provenance records
    # them (None: ``arguments``; the tasks' resolution records the command's own)
    benchmarks: str = "Normal"
    k: int = DEFAULT_K
    datasets: Optional[Tuple[Any, ...]] = None  # resolved datasets (the tasks' last); None: the ten standard
    tasks: Tuple[Any, ...] = ()
    noisy_channel: bool = False
    retriever: Any = None
    test_items: Optional[QuerySubset] = None
    selection: Selection = Everything()
    shard_unit: str = "query"
    write_out: int = 0
    policy: Optional[AnswerPolicy] = None  # what the runner does with the answers, as a notebook's run_suite(policy=)
    # gives it (its write_out and exact_sum are the configuration's too); None: write_out's and exact_sum's
    show_config: bool = False
    cache: Any = None  # the prediction cache: a file path (a notebook may give an open PredictionCache)
    output_dir: Optional[str] = None
    log_samples: Optional[str] = None
    requests_per_call: Optional[int] = None
    progress: Optional[bool] = None
    model_args_text: str = ""
    sharded: Optional[Mapping[str, Any]] = field(default=None, hash=False)  # the launcher's shards, for provenance
    methods: Tuple[Any, ...] = ()  # --methods, resolved (vanilla first); empty: a plain run
    resamples: Optional[int] = None  # the methods table's bootstrap resamples (None: the statistics' default)
    cost: Optional[CostOptions] = None  # a dry run's cost estimate options; None: tokens only where counted
    lite_proxy: Any = None  # a lite run's proxy: None, "reference", a stats.lite_proxy.Proxy or a tuple of those
    lite_until: Optional[float] = None  # a lite run's target half-width: further looks until it is reached
    lite_options: LiteOptions = LiteOptions()  # a lite run's intervals and full-run counts
    suite_options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # further keyword arguments of
    # every sub-benchmark (a notebook's run_lite(**options); own_distribution=False leaves the non-standard columns out)
    exact_sum: str = "standard"  # the exact-sum rule a model backend's rows take (metrics/exact_sum.py)
    command: Optional[Tuple[str, ...]] = None  # the command line parsed into this run (None: a notebook's run)

    @property
    def quiet_departures(self) -> bool:
        """Departures the user asked for on the command line are not warned about one by one."""
        return bool(self.retriever is not None or self.test_items is not None
                    or any(task.config.run.retriever for task in self.tasks))

    @property
    def provenance_arguments(self) -> Mapping[str, Any]:
        """The backend arguments provenance records (secrets are removed when it is written)."""
        return self.arguments if self.recorded_arguments is None else self.recorded_arguments

    @property
    def answer_policy(self) -> AnswerPolicy:
        """What the runner does with the answers: ``policy`` where given, else ``write_out``'s and ``exact_sum``'s."""
        if self.policy is not None:
            return self.policy
        return AnswerPolicy(write_out=self.write_out, exact_sum=self.exact_sum)

    @property
    def summarises(self) -> bool:
        """False for a dry run, a shard or a run that only stores its answers: nothing is summarised or recorded."""
        return not isinstance(self.selection, (Nothing, Shard)) and self.answer_policy.summarize

    @property
    def lite_sample(self) -> Any:
        """The lite run's sample (:class:`~StaICC.sampling.lite.LiteSample`), None for any other run."""
        return self.test_items.lite_sample if self.test_items is not None else None
