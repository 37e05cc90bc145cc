"""A run's sub-benchmarks as the statistics read them: :class:`Part` (a compound sub-benchmark's parts
each on its own, named like the records' ``benchmark`` field), from a results file
(:mod:`.run_files`) or from a result in memory (:func:`result_parts`)."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple


@dataclass(frozen=True)
class Part:
    """One sub-benchmark of a run (a compound's part), as the statistics read it: its result dict, its
    metadata and its records by dataset."""

    name: str
    results: Dict[str, Any]
    metadata: Dict[str, Any]
    records: Dict[str, Sequence[Dict[str, Any]]] = field(default_factory=dict)
    compound: Tuple[str, ...] = ()  # (compound sub-benchmark, its key) for a compound's part

    @property
    def divided(self) -> Dict[str, Any]:
        return self.results.get("Divided results", {})

    @property
    def averaged(self) -> Dict[str, Any]:
        return self.results.get("Averaged results", {})

    @property
    def benchmark(self) -> str:
        """The sub-benchmark that ran: the compound one for a compound's part, else the part itself."""
        return self.compound[0] if self.compound else self.name

    @property
    def label(self) -> str:
        """Its title in a run's tables: ``Triplet_bias/contextual`` for a compound's part, its name otherwise."""
        return "/".join(self.compound) if self.compound else self.name

    def datasets(self) -> List[str]:
        return list(self.divided) or list(self.metadata.get("datasets", []))


def result_parts(result: Mapping[str, Any]) -> Dict[str, Part]:
    """The parts of a suite result in memory, as a loaded run's: each sub-benchmark, a compound one unfolded
    into its parts, with its records by dataset."""
    from ..spec import unfold
    parts: Dict[str, Part] = {}
    for unfolded in unfold(result):
        part = unfolded.value
        records = {plan_records.dataset: plan_records  # one dataset's records each (as the part collected them)
                   for plan_records in getattr(getattr(part, "records", None), "_parts", ())}
        parts[unfolded.part] = Part(unfolded.part, dict(part), dict(part.metadata), records, unfolded.compound_key)
    return parts
