"""A dry run's token count against what a real run computed: exact with the hf backend's tokenizer (given, after
prefix sharing, read positions) in every scoring mode and packing, with no weights loaded; characters / 4 without."""
import math

import pytest

pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')

from backend_helpers import save_tiny, tiny_pair  # noqa: E402

from StaICC.backends.registry import make_backend, planned_backend  # noqa: E402
from StaICC.backends.token_counts import (ApproximateTokenCounter, hf_token_counter, model_shape_of,  # noqa: E402
                                          CHARS_PER_TOKEN)
from StaICC.backends.tree_forward import model_shape  # noqa: E402
from StaICC.engine.selection import Nothing, QuerySubset  # noqa: E402
from StaICC.subbenchmarks.suite import build_suite, plan_suite, run_suite  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny(str(tmp_path_factory.mktemp("tiny") / "tiny-llama"))


def small_suite(benchmarks="Normal,GLER", noisy=False):
    return build_suite(benchmarks, ["TREC", "GLUE-SST2"], 4, test_items=QuerySubset.lite(items=5),
                       noisy_channel=noisy)


@pytest.mark.parametrize("arguments, benchmarks, noisy", [
    ({}, "Normal,Triplet_bias,GLER", False),
    ({"scoring": "sequence"}, "Normal", False),
    ({"scoring": "first_token", "requests_per_call": "7"}, "Normal", False),
    ({"scoring": "sequence"}, "Normal", True),
    ({"packing": "tree"}, "Normal,GLER", False),
    ({"packing": "rows"}, "Normal,GLER", False),
])
def test_the_dry_run_counts_the_tokens_a_run_computes_without_loading_the_weights(model_dir, arguments, benchmarks,
                                                                                   noisy):
    arguments = dict(arguments, pretrained=model_dir, device="cpu")
    dry = planned_backend("hf", **arguments)
    counter = hf_token_counter(arguments, dry).counter
    counted = run_suite(dry, suite=small_suite(benchmarks, noisy), selection=Nothing(measure=counter)).metadata
    assert not dry.built  # the tokenizer came from the folder; the weights were never loaded
    real = planned_backend("hf", **arguments)
    asked = run_suite(real, suite=small_suite(benchmarks, noisy)).metadata
    count, usage = counter.count, real.usage()
    assert count.exact and count.requests == counted["distinct_prompts"] == asked["asked"]
    assert (count.tokens, count.shared, count.reads) == (usage["tokens"], usage["tokens_after_sharing"],
                                                         usage["reads"])
    if arguments.get("packing") == "rows":
        assert count.shared == count.tokens  # rows packing computes each distinct sequence whole
    else:
        assert count.shared < count.tokens  # prefixes were shared
    real.close()
    assert real.usage() == usage  # kept after close, for the run's provenance


def test_a_cached_answer_is_not_counted(model_dir, tmp_path):
    arguments = {"pretrained": model_dir, "device": "cpu"}
    cache = str(tmp_path / "c.sqlite")
    run_suite(planned_backend("hf", **arguments), suite=small_suite("Normal"), cache=cache)
    dry = planned_backend("hf", **arguments)
    counter = hf_token_counter(arguments, dry).counter
    run_suite(dry, suite=small_suite("Normal,GLER"), cache=cache, selection=Nothing(measure=counter))
    real = planned_backend("hf", **arguments)
    run_suite(real, suite=small_suite("Normal,GLER"), cache=cache)
    assert counter.count.tokens == real.usage()["tokens"] > 0


def test_generate_mode_counts_the_prompt_and_bounds_the_new_tokens(model_dir):
    arguments = {"pretrained": model_dir, "device": "cpu", "scoring": "generate", "max_new_tokens": "3"}
    dry = planned_backend("hf", **arguments)
    counter = hf_token_counter(arguments, dry).counter
    run_suite(dry, suite=small_suite("Normal"), selection=Nothing(measure=counter))
    _, tokenizer = tiny_pair()
    prompts = {r.prompt for works in plan_suite(None, small_suite("Normal")).values() for w in works
               for r in w.requests()}
    assert counter.count.tokens == sum(len(tokenizer(p)["input_ids"]) for p in prompts)
    assert counter.count.generates and counter.count.output_tokens == 3 * len(prompts)


def test_the_shape_from_config_json_is_the_loaded_models(model_dir):
    arguments = {"pretrained": model_dir, "device": "cpu"}
    described = hf_token_counter(arguments, planned_backend("hf", **arguments), with_shape=True)
    model, _ = tiny_pair()
    nonembedding, hidden, layers = model_shape(model)
    assert (described.shape.nonembedding, described.shape.hidden, described.shape.layers) == (nonembedding, hidden,
                                                                                              layers)
    assert described.shape.vocab == model.get_output_embeddings().weight.shape[0]
    assert model_shape_of(make_backend("hf", **arguments).model) == described.shape


def test_without_a_tokenizer_tokens_are_characters_over_four_of_what_the_backend_sends():
    backend = make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m")  # sequence scoring: never asked
    counter = ApproximateTokenCounter(backend, 64)
    suite = build_suite("Normal", ["TREC"], 4, test_items=QuerySubset.first(5), noisy_channel=False)
    run_suite(backend, suite=suite, selection=Nothing(measure=counter))
    requests = list(dict.fromkeys((r.prompt, r.label_space) for works in plan_suite(None, suite).values()
                                  for w in works for r in w.requests()))
    characters = sum(len(prompt + label) for prompt, labels in requests for label in labels)
    assert counter.count.characters == characters
    assert counter.count.tokens == math.ceil(characters / CHARS_PER_TOKEN) and not counter.count.exact
    assert counter.count.shared is None
    assert counter.count.output_tokens == sum(len(labels) for _, labels in requests)  # max_tokens=1 per echo
    assert counter.count.calls == math.ceil(len(requests) / 64)
