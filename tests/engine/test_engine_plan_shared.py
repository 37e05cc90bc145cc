"""Works of one dataset written with shared pieces give the requests each gives alone.

The runner writes a dataset's works with one ``rendered`` dict: demonstration texts are
shared by works over the same demonstration rows, query texts by works over the same test
rows, and a pass without label noise or pseudo queries takes the prompts of an equal pass
written before.  None of that may change a prompt, a segment or a request field.
"""
import warnings

import pytest

from StaICC.backends import as_backend
from StaICC.errors import TamperingWarning
from StaICC.subbenchmarks.suite import build_suite, plan_suite

DATASET = "financial_phrasebank"


@pytest.fixture(scope="module")
def works():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        planned = plan_suite(as_backend(lambda prompt, label_space: 0), build_suite("all", datasets=[DATASET]))
    return [work for part in planned.values() for work in part]


def fields(request):
    return (request.prompt, request.label_space, request.benchmark, request.dataset, request.query_index,
            request.pass_index, request.segments)


@pytest.mark.parametrize("segments", [False, True])
def test_shared_pieces_change_no_request(works, segments):
    rendered = {}
    shared = [work.requests(rendered, segments=segments) for work in works]
    for work, requests in zip(works, shared):
        alone = work.requests(None, segments=segments)
        assert [fields(r) for r in requests] == [fields(r) for r in alone], work.part
        if segments:
            assert all("".join(r.segments) == r.prompt for r in requests if isinstance(r.prompt, str))


def test_an_equal_pass_takes_the_prompts_written_before(works):
    rendered = {}
    by_part = {work.part: work.requests(rendered) for work in works}
    normal, post, gler = by_part["Normal"], by_part["Post_bias"], by_part["GLER"]
    assert all(a.prompt is b.prompt for a, b in zip(normal, post))
    assert all(a.prompt is b.prompt for a, b in zip(normal, gler[:len(normal)]))  # GLER's noise-free pass
    assert [r.benchmark for r in post[:1]] == ["Post_bias"] and post[5].query_index == 5
