"""Demonstrations as chat turns (lm-eval's fewshot_as_multiturn) for the hf backend: the segments a
request carries concatenate to its prompt for every standard dataset, the hf backend scores exactly
the hand-built multi-turn chat in each log-probability mode, and the setting is checked and recorded."""
import dataclasses
import os

import pytest

from StaICC import cli
from StaICC.engine.plan import pass_sources, plan_requests
from StaICC.requests import Request
from StaICC.subbenchmarks.suite import build_suite, plan_suite

CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
LABELS = ("positive", "negative")
#: a prompt of two demonstrations in its segments, as the prompt writer cuts it
SEGMENTS = ("Classify the review.\n", "Review: a gripping film.\nSentiment: ", "positive\n",
            "Review: dull and slow.\nSentiment: ", "negative\n", "Review: a fine cast.\nSentiment: ")
PROMPT = "".join(SEGMENTS)
BY_HAND = ("<|system|>Be brief.\n\nClassify the review.\n"
           "<|user|>Review: a gripping film.\nSentiment:\n<|assistant|>positive\n"
           "<|user|>Review: dull and slow.\nSentiment:\n<|assistant|>negative\n"
           "<|user|>Review: a fine cast.\nSentiment:\n<|assistant|>")


def _sampled(work, queries=3):
    """The work with the first ``queries`` queries of each pass only (its prompts are written the same way)."""
    plan = dataclasses.replace(work.plan, demonstrations=work.plan.demonstrations[:queries])
    return dataclasses.replace(work, plan=plan)


def test_segments_concatenate_to_the_prompt_for_every_standard_dataset():
    from StaICC.backends.reference import reference_backend
    planned = plan_suite(reference_backend(), build_suite("all", k=4))
    checked = 0
    for works in planned.values():
        for work in works:
            work = _sampled(work)
            plain = work.requests()
            split = work.requests(segments=True)
            assert [r.prompt for r in split] == [r.prompt for r in plain]
            assert [r.key() for r in split] == [r.key() for r in plain]  # the cache key does not change
            for request in split:
                if request.noisy_channel:
                    assert request.segments is None
                    continue
                assert "".join(request.segments) == request.prompt, (work.part, work.dataset)
                assert len(request.segments) == 2 + 2 * 4  # instruction, 4 x (input, label), query
                checked += 1
            assert all(r.segments is None for r in plain)
    assert checked > 100


def test_segments_follow_label_noise_and_the_cut():
    from StaICC.errors import TamperingWarning
    from StaICC.subbenchmarks.builtin import Normal
    experimentor = Normal(k=3, datasets=[0])[0]
    writer = experimentor.prompt_former
    plan = experimentor.plan()
    plan = dataclasses.replace(plan, demonstrations=plan.demonstrations[:20])
    clean = plan_requests(plan, pass_sources(plan, writer), segments=True)
    with pytest.warns(TamperingWarning):
        writer.set_label_wrong_rate(1 / 3)
        writer.cut_by_length = 7
    plain = plan_requests(plan, pass_sources(plan, writer))
    split = plan_requests(plan, pass_sources(plan, writer), segments=True)
    for a, b in zip(plain, split):
        assert "".join(b.segments) == b.prompt == a.prompt
    flipped = [c.segments[2:-1:2] != s.segments[2:-1:2] for c, s in zip(clean, split)]
    assert any(flipped)  # one demonstration label in three is the next label, in its label part
    assert all(len(s.segments[-1]) == len(c.segments[-1]) - 7 for c, s in zip(clean, split))
    writer.use_noisy_channel()
    noisy = plan_requests(plan, pass_sources(plan, writer), segments=True)
    assert all(r.noisy_channel and r.segments is None for r in noisy)


@pytest.fixture(scope="module")
def pair():
    pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
    from backend_helpers import tiny_pair
    model, tokenizer = tiny_pair()
    tokenizer.chat_template = CHAT_TEMPLATE
    return model, tokenizer


@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_demonstrations_become_chat_turns_in_every_log_probability_mode(pair, scoring):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = pair
    request = Request(PROMPT, LABELS, segments=SEGMENTS)
    plain = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny")
    one_turn = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny", apply_chat_template=True,
                         system_instruction="Be brief.")
    turns = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny", apply_chat_template=True,
                      system_instruction="Be brief.", fewshot_as_multiturn=True)
    assert turns.needs_segments and not one_turn.needs_segments and not plain.needs_segments
    # the scored text is the hand-built chat, its BOS given once (by the tokenizer)
    assert turns.scored_text(request) == BY_HAND
    assert turns.score([request]) == plain.score([Request(BY_HAND, LABELS)])
    assert turns.score([request]) != one_turn.score([request])
    assert len({plain.fingerprint(), one_turn.fingerprint(), turns.fingerprint()}) == 3
    assert turns.identity()["fewshot_as_multiturn"] is True and "fewshot_as_multiturn" not in one_turn.identity()
    assert turns.non_standard[-1] == "demonstrations as chat turns (fewshot_as_multiturn=true)"


def test_generate_mode_writes_the_same_turns(pair):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = pair
    turns = HFBackend(model, tokenizer, model_id="tiny", scoring="generate", max_new_tokens=2, chat=True,
                      system="Be brief.", fewshot_as_multiturn=True)
    request = Request(PROMPT, LABELS, segments=SEGMENTS)
    assert turns.chat_text(request) == tokenizer.bos_token + BY_HAND
    (answer,) = turns.score([request])
    assert isinstance(answer.text, str)
    assert turns.identity()["fewshot_as_multiturn"] is True
    assert "demonstrations as chat turns (fewshot_as_multiturn=true)" in turns.non_standard


def test_a_prompt_without_demonstrations_or_instruction_is_one_user_turn(pair):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = pair
    turns = HFBackend(model, tokenizer, model_id="tiny", apply_chat_template=True, fewshot_as_multiturn=True)
    request = Request("Review: ok.\nSentiment: ", LABELS, segments=("", "Review: ok.\nSentiment: "))
    assert turns.scored_text(request) == "<|user|>Review: ok.\nSentiment:\n<|assistant|>"


def test_the_setting_is_checked_with_one_line_errors(pair):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = pair
    errors = []
    with pytest.raises(ValueError, match="needs apply_chat_template=true") as caught:
        HFBackend(model, tokenizer, model_id="tiny", fewshot_as_multiturn=True)
    errors.append(caught.value)
    with pytest.raises(ValueError, match="fewshot_as_multiturn and message_builder") as caught:
        HFBackend(model, tokenizer, model_id="tiny", chat=True, fewshot_as_multiturn=True,
                  message_builder=lambda r: [])
    errors.append(caught.value)
    turns = HFBackend(model, tokenizer, model_id="tiny", chat=True, fewshot_as_multiturn=True)
    noisy = Request(("positive a", "negative a"), LABELS)
    with pytest.raises(ValueError, match="noisy-channel") as caught:
        turns.score([noisy])
    errors.append(caught.value)
    with pytest.raises(ValueError, match="carrying their segments") as caught:
        turns.score([Request(PROMPT, LABELS)])
    errors.append(caught.value)
    assert all("\n" not in str(e) for e in errors)


def test_the_runner_writes_segments_only_for_a_backend_that_reads_them_and_caches_apart(pair, tmp_path):
    from StaICC.backends.hf import HFBackend
    from StaICC.backends.reference import reference_backend
    from StaICC.cache import open_cache
    from StaICC.engine.runner import run_works
    model, tokenizer = pair
    (work,) = plan_suite(reference_backend(), build_suite("Normal", k=2, datasets=[0]))["Normal"]
    work = dataclasses.replace(_sampled(work, 16), truth=work.truth[:16])
    turns = HFBackend(model, tokenizer, model_id="tiny", chat=True, fewshot_as_multiturn=True)
    one_turn = HFBackend(model, tokenizer, model_id="tiny", chat=True)
    seen = {}
    for name, backend in (("turns", turns), ("one_turn", one_turn)):
        score = backend.score
        backend.score = lambda requests, name=name, score=score: seen.setdefault(name, list(requests)) and score(requests)
    cache = open_cache(str(tmp_path / "cache.sqlite"))
    try:
        (first,) = run_works([work], [turns], cache=cache)
        (second,) = run_works([work], [one_turn], cache=cache)  # same prompts, other backend: asked again
    finally:
        cache.close()
    assert all(r.segments is not None and "".join(r.segments) == r.prompt for r in seen["turns"])
    assert all(r.segments is None for r in seen["one_turn"])
    assert len(seen["turns"]) == len(seen["one_turn"]) == 16
    assert first.outputs["prob."] != second.outputs["prob."]
    assert first.prompt_set_sha256 == second.prompt_set_sha256


def test_the_cli_refuses_multiturn_without_the_chat_template_in_one_line(capsys):
    pytest.importorskip("torch")
    path = os.path.join(os.path.dirname(__file__), "no-such-model")
    code = cli.main(["run", "--model", "hf", "--model-args", f"pretrained={path},fewshot_as_multiturn=true",
                     "--benchmarks", "Normal"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "fewshot_as_multiturn" in err


def test_a_task_file_turns_demonstrations_into_chat_turns(pair, tmp_path, capsys):
    import json

    from backend_helpers import save_tiny
    model_dir = save_tiny(str(tmp_path / "tiny-chat"))
    with open(os.path.join(model_dir, "chat_template.jinja"), "w", encoding="utf-8") as handle:
        handle.write(CHAT_TEMPLATE)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    task = tmp_path / "turns.toml"
    task.write_text(open(os.path.join(root, "examples", "tasks", "sentiment.toml"), encoding="utf-8").read()
                    .replace("../data/sentiment.csv", os.path.join(root, "examples", "data", "sentiment.csv"))
                    .replace('benchmarks = "all"', 'benchmarks = "Normal"')
                    + '\n[model]\nbackend = "hf"\napply_chat_template = true\nfewshot_as_multiturn = true\n',
                    encoding="utf-8")
    code = cli.main(["run", "--tasks", str(task), "--model-args", f"pretrained={model_dir},device=cpu",
                     "--limit", "5", "--output-dir", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    with open(tmp_path / "out" / "results.json", encoding="utf-8") as handle:
        result = json.load(handle)
    model = result["provenance"]["model"]
    assert model["arguments"]["fewshot_as_multiturn"] is True and model["identity"]["fewshot_as_multiturn"] is True
    settings = result["benchmarks"]["Normal"]["metadata"]["non_standard_settings"]["movie_sentiment"]
    assert "demonstrations as chat turns (fewshot_as_multiturn=true)" in settings
    assert result["benchmarks"]["Normal"]["metadata"]["standard"] is False
