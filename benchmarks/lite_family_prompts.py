"""The broader ICL prompts a distilled member of ``lite_trained_family.py`` trains on: the kinds the suite's
sub-benchmarks write, all built from the **demonstration sets** (never a test item).

A member distilled on prompts of one kind (the standard template, a demonstration-set query, true labels) follows
its teacher on the test items but less on what the other sub-benchmarks ask: GLER's demonstrations carry noisy
labels, Domain_bias and Contextual_bias query with pseudo-queries, Template_sens writes other templates.  A real
family's distillation data is broad (web text, instructions); these kinds were chosen *knowing* the suite's
sub-benchmarks, so they are a closer stand-in for that breadth, not a neutral one.  Each prompt draws, from one
seeded ``random.Random``:

* its template: the dataset's standard one (half the time) or one of the nine of Template_sens's L9 table
  (``TemplateProcedure``'s rows, written by ``applied_template`` as the suite writes them);
* its label noise: none (half the time) or one of GLER's non-zero rates, applied by the suite's own writer
  (``CompiledTemplate``: W = int(k * rate) demonstrations get the next label), from a stream at a drawn state;
* 1 to 4 demonstrations of the demonstration set, in drawn order (Demo_sens's other demonstration sets);
* its query: a demonstration-set item (half the time), a domain pseudo-query (a quarter: 128 words of the
  demonstration texts by the standard's own draw, ``word_draws.draw_queries``, from a drawn stream state, so
  not the run's queries) or the empty query of Contextual_bias (a quarter);

then a label word after the query's label prefix, drawn at random: it only marks the position whose
distribution is matched (no true label enters the loss).
"""
import random
import warnings
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

#: the share of prompts in the standard template, and of prompts without label noise
STANDARD_SHARE = 0.5
CLEAN_SHARE = 0.5
#: the shares of the query kinds: a demonstration-set item, a domain pseudo-query, the empty query
QUERY_SHARES = (0.5, 0.25, 0.25)


@dataclass(frozen=True)
class BroadSource:
    """One dataset's material: its triplet, its demonstration texts split for the domain draw, and each template
    (the standard one first, then the L9 rows) with the token id of each of its label words."""

    triplet: Any
    words: Any
    templates: Tuple[Tuple[Any, Tuple[int, ...]], ...]


def broad_sources(tokenizer: Any, writers: Sequence[Tuple[Any, Any]], label_ids: Any) -> List[BroadSource]:
    """A :class:`BroadSource` per (prompt writer, demonstration part); ``label_ids(tokenizer, prefix, words)``
    gives the label words' token ids after a prefix (refusing a word of several tokens)."""
    from StaICC.engine.procedures import TemplateProcedure
    from StaICC.prompt.source import applied_template
    from StaICC.prompt.template import Template
    from StaICC.prompt.word_draws import WordTable
    found = []
    for writer, part in writers:
        triplet = writer.triplet_dataset
        standard = Template.from_dataset(triplet.demonstration, triplet.test)
        rows = [applied_template(triplet, fields) for fields in TemplateProcedure(part.get_alternate_template()).templates]
        templates = tuple((t, tuple(label_ids(tokenizer, t.label_prefix, t.label_space))) for t in [standard, *rows])
        texts = part.table.rows
        words = WordTable([[row[0][e] for row in texts] for e in range(len(texts[0][0]))])
        found.append(BroadSource(triplet, words, templates))
    return found


def broad_text(source: BroadSource, rng: random.Random) -> Tuple[str, Any, Tuple[int, ...]]:
    """One broad prompt of ``source`` with a label word after it: (text, its template, its label token ids)."""
    from StaICC.prompt.source import with_label_wrong_rate
    from StaICC.prompt.template import write_prompt
    from StaICC.rng import StableRandom
    from StaICC.spec import label_noise_rates
    from StaICC.standard import DEFAULT_K, DOMAIN_QUERY_LENGTH, GLER_INTERPOLATIONS
    from StaICC.prompt.word_draws import draw_queries
    templates = source.templates
    template, ids = templates[0] if rng.random() < STANDARD_SHARE else templates[1 + rng.randrange(len(templates) - 1)]
    rate = 0 if rng.random() < CLEAN_SHARE else rng.choice(label_noise_rates(GLER_INTERPOLATIONS)[1:])
    part = source.triplet.demonstration
    k = rng.randint(1, DEFAULT_K)
    picks = rng.sample(range(len(part)), k + 1)
    kind = rng.random()
    if kind < QUERY_SHARES[0]:
        query = list(part.table.rows[picks[k]][0])
    elif kind < QUERY_SHARES[0] + QUERY_SHARES[1]:
        query = list(draw_queries(source.words, DOMAIN_QUERY_LENGTH, rng.getrandbits(32), 1)[0][0])
    else:
        query = [""] * source.words.elements
    noise = StableRandom()
    noise.state = rng.getrandbits(32)  # each prompt's flips from its own drawn state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # W / k is uneven for k < 4: the suite warns once a prompt, here it is meant
        prompt = write_prompt(with_label_wrong_rate(template, rate), source.triplet, picks[:k], query, noise)
    return prompt + rng.choice(template.label_space), template, ids
