"""What a run writes its prompts from, as one frozen value: the data, each pass's template, the pseudo queries.

The prompt writer (:class:`~StaICC.prompt.writer.prompt_writter`) is the original's
mutable object: a user changes its template between runs.  A run never reads it: when a
run is planned, the writer's state is copied into a :class:`PromptSource` (its templates
are frozen :class:`~StaICC.prompt.template.Template` values), and the run writes every
prompt from that copy, so changing the writer afterwards changes no planned run.

The template functions here are the pure forms of the writer's two pass setters:
:func:`with_label_wrong_rate` (GLER's noise passes) and :func:`applied_template`
(Template_sens's templates); the writer's mutators call them too.
"""
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError, UnknownNameError
from ..rng import StableRandom
from ..validation import check_label_space, check_real
from .template import _KEY_ALIASES, _TEMPLATE_FIELDS, CompiledTemplate, Prompt, Segments, Template


def with_label_wrong_rate(template: Template, rate: float) -> Template:
    """``template`` with ``rate`` of each prompt's demonstration labels flipped; the rate is checked first."""
    try:
        check_real(rate, "the label wrong rate", minimum=0, maximum=1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The label wrong rate should be in [0, 1]: {exc}") from None
    return replace(template, label_wrong_rate=rate)


def checked_label_space(triplet: Any, space: Sequence[str]) -> Tuple[str, ...]:
    """One distinct word per label of the dataset, in label order; words beyond them are distractors that
    the model may choose but no item has (as in the original).  A repeated word makes predictions ambiguous."""
    name = triplet.name
    expected = len(triplet.demonstration.label_space)
    if len(space) < expected:
        raise InvalidValueError(f"the label space needs at least {expected} words (one per label of {name!r}), "
                                f"got {len(space)}")
    return tuple(check_label_space(space, at=f" (dataset {name!r})"))


def applied_template(triplet: Any, fields: Dict[str, object]) -> Template:
    """The dataset's standard template with ``fields`` set (Template field names, or ``use_noisy_channel``).

    Lists become tuples; an unknown key is a KeyError, a label space of the wrong size a ValueError.
    """
    changes = {}
    for key, value in fields.items():
        name = _KEY_ALIASES.get(key, key)
        if name not in _TEMPLATE_FIELDS:
            raise UnknownNameError(f"unknown template key {key!r}; expected one of {sorted(_TEMPLATE_FIELDS)}")
        changes[name] = tuple(value) if isinstance(value, list) else value
    if "label_space" in changes:
        changes["label_space"] = checked_label_space(triplet, changes["label_space"])
    return replace(Template.from_dataset(triplet.demonstration, triplet.test), **changes)


@dataclass(frozen=True, eq=False)
class PromptSource:
    """Everything one run's prompts are written from: the triplet, the template of each pass, the pseudo queries.

    ``pseudo_queries``: None (each query is a test item), or the writer's pseudo-query
    generator; a run reads a fresh one (:meth:`fresh_queries`) and never advances the writer's.
    """

    triplet: Any
    templates: Tuple[Template, ...]
    pseudo_queries: Any = None

    def fresh_queries(self) -> Optional[Iterator[List[str]]]:
        """The pseudo queries from their first one: what every run of the standard sees."""
        generator = self.pseudo_queries
        if generator is None:
            return None
        fresh = getattr(generator, "fresh", None)
        if fresh is not None:
            return fresh()
        restart = getattr(generator, "restart", None)  # a user's generator: restarted if it can be
        if restart is not None:
            restart()
        return generator

    def write_pass(self, number: int, queries: List[Tuple[Sequence[int], int]], noise: StableRandom,
                   pseudo: Optional[Iterator[List[str]]], pieces: dict, segments: Optional[list] = None,
                   only: Optional[Sequence[int]] = None) -> List[Prompt]:
        """The prompts of pass ``number`` for (demonstration indexes, test index) ``queries``, in order.

        ``noise`` and ``pseudo`` continue from pass to pass; ``only``: write just these
        positions (the noise stream and the pseudo queries still advance over every query).
        """
        if pseudo is not None:
            queries = [(demos, query) for (demos, _), query in zip(queries, pseudo)]
        compiled = CompiledTemplate(self.templates[number], self.triplet)
        return compiled.write_many(queries, noise, pieces, segments, only)

    def flips(self, number: int, demonstrations: Sequence[Sequence[int]], noise: StableRandom) -> List[Sequence[int]]:
        """The demonstration index values whose label pass ``number`` flips, per query (no prompt written)."""
        compiled = CompiledTemplate(self.templates[number], self.triplet)
        if not compiled.template.label_wrong_rate:
            return [()] * len(demonstrations)
        return compiled.corrupted_each(demonstrations, noise, warn_uneven=False)


__all__ = ["PromptSource", "applied_template", "checked_label_space", "with_label_wrong_rate", "Segments"]
