"""Tasks with a tiny random HF model: the examples through the CLI, chat templates in the scoring
modes (lm-eval's apply_chat_template / system_instruction), and an asset's post_process in generate mode."""
import json
import os

import pytest

pytest.importorskip("torch", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")
pytest.importorskip("transformers", reason="the [hf] extra is not installed (pip install \"StaICC[hf]\")")

from backend_helpers import save_tiny, tiny_pair  # noqa: E402

from run_fixtures import read_results as document, run_cli as run  # noqa: E402
from StaICC.requests import Request  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "tasks")
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = save_tiny(str(tmp_path_factory.mktemp("tiny-chat-llama")))
    with open(os.path.join(directory, "chat_template.jinja"), "w", encoding="utf-8") as handle:
        handle.write(CHAT_TEMPLATE)
    return directory


@pytest.mark.parametrize("example", ["sentiment.toml", "nli.yaml", "sentiment_asset.py"])
def test_each_example_through_the_cli_with_a_tiny_hf_model(example, model_dir, tmp_path, capsys):
    if example.endswith(".yaml"):
        pytest.importorskip("yaml")
    out = tmp_path / "out"
    run(["run", "--tasks", os.path.join(EXAMPLES, example), "--model", "hf", "--model-args",
         f"pretrained={model_dir},device=cpu", "--benchmarks", "all", "--limit", "6", "--output-dir", str(out),
         "--log-samples"], capsys)
    result = document(out)
    assert list(result["benchmarks"]) == ["Normal", "Triplet_bias", "GLER", "Template_sens", "Demo_sens"]
    assert result["provenance"]["model"]["identity"]["model"] == model_dir
    (entry,) = result["provenance"]["tasks"]
    normal = result["benchmarks"]["Normal"]["results"]["Divided results"][entry["name"]]
    assert 0 <= normal["accuracy"] <= 1 and 0 < normal["averaged_truelabel_likelihood"] < 1
    assert (out / "samples.jsonl").read_text(encoding="utf-8").count("\n") > 0


def test_the_toml_task_and_the_asset_score_alike_on_hf(model_dir, tmp_path, capsys):
    for example in ("sentiment.toml", "sentiment_asset.py"):
        run(["run", "--tasks", os.path.join(EXAMPLES, example), "--model", "hf", "--model-args",
             f"pretrained={model_dir},device=cpu", "--limit", "6", "--output-dir", str(tmp_path / example)], capsys)
    toml = document(tmp_path / "sentiment.toml")["benchmarks"]["Normal"]["results"]["Divided results"]
    asset = document(tmp_path / "sentiment_asset.py")["benchmarks"]["Normal"]["results"]["Divided results"]
    assert {k: asset["movie_sentiment"][k] for k in toml["movie_sentiment"]} == toml["movie_sentiment"]


@pytest.mark.parametrize("scoring", ["last_token", "first_token", "sequence"])
def test_a_chat_template_wraps_the_scored_prompt_in_every_log_probability_mode(scoring):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = tiny_pair()
    tokenizer.chat_template = CHAT_TEMPLATE
    requests = [Request("Review: a gripping film. Sentiment:", ("positive", "negative")),
                Request("Review: dull and slow. Sentiment:", ("positive", "negative"))]
    plain = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny")
    chat = HFBackend(model, tokenizer, scoring=scoring, model_id="tiny", apply_chat_template=True,
                     system_instruction="Answer with one word.")
    # the chat backend scores exactly the templated text (its BOS given once, by the tokenizer)
    by_hand = [Request("<|system|>Answer with one word.\n<|user|>" + r.prompt + "\n<|assistant|>", r.label_space)
               for r in requests]
    assert chat.scored_text(requests[0]) == by_hand[0].prompt
    assert tokenizer(chat.scored_text(requests[0]))["input_ids"].count(tokenizer.bos_token_id) == 1
    assert chat.score(requests) == plain.score(by_hand)
    assert chat.score(requests) != plain.score(requests)
    assert chat.fingerprint() != plain.fingerprint()  # the cache keeps their answers apart
    assert chat.identity()["chat"] is True and chat.identity()["system"] == "Answer with one word."
    assert plain.non_standard == ([] if scoring == "last_token" else [f"scoring={scoring}"])
    assert chat.non_standard[-1] == f"chat template (chat=true) in scoring={scoring}"


def test_chat_template_arguments_are_checked():
    from StaICC.backends.hf import HFBackend
    model, tokenizer = tiny_pair()
    with pytest.raises(ValueError, match="apply_chat_template and chat are the same setting"):
        HFBackend(model, tokenizer, chat=True, apply_chat_template=True)
    noisy = Request(("a b positive", "a b negative"), ("positive", "negative"))
    with pytest.raises(ValueError, match="noisy-channel"):
        HFBackend(model, tokenizer, model_id="tiny", apply_chat_template=True).score([noisy])


def test_a_task_sets_the_chat_template_for_the_hf_backend(model_dir, tmp_path, capsys):
    task = tmp_path / "chat.toml"
    task.write_text(open(os.path.join(EXAMPLES, "sentiment.toml"), encoding="utf-8").read()
                    .replace("../data/sentiment.csv", os.path.join(ROOT, "examples", "data", "sentiment.csv"))
                    .replace('benchmarks = "all"', 'benchmarks = "Normal"')
                    + '\n[model]\nbackend = "hf"\napply_chat_template = true\nsystem_instruction = "Be brief."\n',
                    encoding="utf-8")
    printed = run(["run", "--tasks", str(task), "--model-args", f"pretrained={model_dir},device=cpu", "--limit", "5",
                   "--output-dir", str(tmp_path / "out")], capsys)  # no --model: the task's backend
    assert "chat template (chat=true) in scoring=last_token" in printed
    result = document(tmp_path / "out")
    model = result["provenance"]["model"]
    assert model["backend"] == "hf"
    assert model["arguments"]["apply_chat_template"] is True and model["arguments"]["system_instruction"] == "Be brief."
    assert model["identity"]["chat"] is True
    settings = result["benchmarks"]["Normal"]["metadata"]["non_standard_settings"]["movie_sentiment"]
    assert "chat template (chat=true) in scoring=last_token" in settings


def test_an_asset_post_process_reads_generated_answers(model_dir, tmp_path, capsys):
    from StaICC.backends.base import code_digest
    from StaICC.tasks import load_task
    asset = tmp_path / "generate.py"
    source = open(os.path.join(EXAMPLES, "sentiment_asset.py"), encoding="utf-8").read()
    source = source.replace('"../data/sentiment.csv"', repr(os.path.join(ROOT, "examples", "data", "sentiment.csv")))
    source = source.replace('"run": {"benchmarks": "all"},', '"run": {"benchmarks": "Normal"}, "model": {"backend": '
                            '"hf", "scoring": "generate", "max_new_tokens": 3, "unparsed": "label:1"},')
    asset.write_text(source, encoding="utf-8")
    run(["run", "--tasks", str(asset), "--model-args", f"pretrained={model_dir},device=cpu", "--limit", "5",
         "--output-dir", str(tmp_path / "out"), "--log-samples"], capsys)
    result = document(tmp_path / "out")
    identity = result["provenance"]["model"]["identity"]
    user_function = load_task(str(asset)).source.hooks["post_process"]
    assert identity["postprocess"]["code_sha256"] == code_digest(user_function)
    assert identity["postprocess"]["function"].endswith(".post_process")
    assert identity["aliases"] == {"negative": ["bad", "awful"], "positive": ["good", "great"]}
    assert identity["unparsed"] == "label:1"
    samples = [json.loads(line) for line in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 10 and all(isinstance(s["text"], str) for s in samples)
    for sample in samples:  # post_process's word, or unparsed=label:1
        expected = ["negative", "neutral", "positive"].index(sample["text"].strip().split("\n")[0].strip(" .!").lower()) \
            if sample["parsed"] else 1
        assert sample["predicted"] == expected
