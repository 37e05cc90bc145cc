"""``distinct_requests`` against the rule it implements, on random works.

The rule, written plainly here: a request is keyed by (backend, prompt, label space, kind)
(by its place when every request is asked); the first request of a key joins the current
batch, a later one becomes another target of that first request.  The runner's version
keys by backend, then (label space, kind), then prompt; both must give the same batches.
"""
import random
from types import SimpleNamespace

import pytest

from StaICC.backends.base import FunctionBackend
from StaICC.engine import runner
from StaICC.requests import REQUEST_KINDS, Request


def _plain_rule(works, requests, backends, *, distinct, in_text_order):
    first = {}
    batches = []
    for w, (work, asked, backend) in enumerate(zip(works, requests, backends)):
        if backend is None:
            continue
        for number in range(len(work.plan.passes)):
            batch = runner._batch_for(batches, backend, work.plan.pass_description(number), in_text_order)
            part = work.plan.pass_slice(number)
            for i in range(part.start, part.stop):
                request = asked[i]
                key = (id(backend), request.prompt, request.label_space, request.kind) if distinct else (w, i)
                if key in first:
                    seen_batch, position = first[key]
                    seen_batch.targets[position].append((w, i))
                    continue
                first[key] = (batch, len(batch.requests))
                batch.requests.append(request)
                batch.targets.append([(w, i)])
    batches = [b for b in batches if b.requests]
    if in_text_order:
        for batch in batches:
            parts = list(dict.fromkeys(works[w].part for targets in batch.targets for w, _ in targets))
            batch.description = f"{', '.join(parts)} {batch.requests[0].dataset}"
            order = sorted(range(len(batch.requests)), key=lambda j: runner._text_order(batch.requests[j]))
            batch.requests = [batch.requests[j] for j in order]
            batch.targets = [batch.targets[j] for j in order]
    return batches


class Plan:
    def __init__(self, passes, per_pass, name):
        self.passes, self.per_pass, self.name = [None] * passes, per_pass, name

    def pass_slice(self, number):
        return slice(number * self.per_pass, (number + 1) * self.per_pass)

    def pass_description(self, number):
        return f"{self.name} pass {number + 1}"


def _random_works(rng):
    models = [FunctionBackend(lambda prompt, label_space: 0) for _ in range(2)]
    spaces = [("a", "b"), ("b", "a"), ("x", "y", "z")]
    works, requests, backends = [], [], []
    for w in range(rng.randrange(1, 5)):
        passes, per_pass = rng.randrange(1, 4), rng.randrange(0, 6)
        works.append(SimpleNamespace(plan=Plan(passes, per_pass, f"work{w}"), part=f"Part{w % 2}"))
        space = rng.choice(spaces)
        asked = []
        for i in range(passes * per_pass):
            label_space = tuple(space) if rng.random() < 0.3 else space  # equal spaces, not always one object
            if rng.random() < 0.1:
                label_space = rng.choice(spaces)
            prompt = f"prompt {rng.randrange(6)}" if rng.random() < 0.8 else (f"n {rng.randrange(3)}", "m")
            kind = rng.choice(REQUEST_KINDS) if rng.random() < 0.3 else "labels"  # a method's representations
            asked.append(Request(prompt, label_space, "B", "toy", i, 0, kind=kind))
        requests.append(asked)
        backends.append(None if rng.random() < 0.1 else rng.choice(models))
    return works, requests, backends


def _shape(batches):
    return [(id(b.backend), b.description, b.requests, b.targets) for b in batches]


@pytest.mark.parametrize("seed", range(150))
def test_distinct_requests_follows_the_plain_rule(seed):
    rng = random.Random(seed)
    works, requests, backends = _random_works(rng)
    for distinct in (True, False):
        for in_text_order in (False, True):
            options = {"distinct": distinct, "in_text_order": in_text_order}
            assert _shape(runner.distinct_requests(works, requests, backends, **options)) == \
                _shape(_plain_rule(works, requests, backends, **options))
