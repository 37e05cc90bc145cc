"""Reasoning models in generate mode: the thinking section is cut off before the label parser reads the text.

The rule itself is checked on texts; the hf backend and the openai backend are checked on a
real ``LlamaForCausalLM`` whose weights force it to write ``<think>negative</think>positive``
(``tests/thinking_model.py``), the openai backend over real HTTP through the reference
server serving that model (inline ``<think>`` text, and the thinking section returned apart
as vLLM's reasoning parser returns it).
"""
import json
import os
import pathlib

import pytest

from StaICC.backends.thinking import ThinkingRule, ThinkingSplit, unparsed_reason
from StaICC.requests import Request, Thinking

LABELS = ("negative", "positive")


def load_json(path):
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
POSITIVE, NEGATIVE, UNIFORM = [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]


@pytest.mark.parametrize("text, mode, expected", [
    ("positive", "auto", ThinkingSplit("positive", None)),
    ("<think>it is negative</think> positive", "auto", ThinkingSplit(" positive", "it is negative")),
    ("  \n<think>a</think>b</think>c", "auto", ThinkingSplit("c", "a</think>b")),  # the last end marker
    ("<think>still negative", "auto", ThinkingSplit("", "still negative", finished=False)),
    ("negative, I think</think>positive", "auto", ThinkingSplit("positive", "negative, I think")),
    ("negative, I think", "on", ThinkingSplit("", "negative, I think", finished=False)),
    ("negative</think>positive", "on", ThinkingSplit("positive", "negative")),
    ("<think>negative</think>positive", "off", ThinkingSplit("<think>negative</think>positive", None)),
    ("the <think> tag in the middle", "auto", ThinkingSplit("the <think> tag in the middle", None)),
])
def test_the_rule_splits_texts(text, mode, expected):
    assert ThinkingRule(mode).split(text) == expected


def test_custom_markers_and_measurement():
    rule = ThinkingRule("auto", "[r]", "[/r]", budget=4)
    split = rule.split("[r]negative[/r]positive")
    assert split == ThinkingSplit("positive", "negative")
    assert rule.measure(split, 5) == Thinking(8, 5, True, over_budget=True)
    assert rule.measure(split, 4) == Thinking(8, 4, True, over_budget=False)
    assert rule.measure(split, None) == Thinking(8, None, True)  # not counted: the budget cannot be checked
    assert rule.measure(rule.split("positive"), 9) is None
    assert "over thinking_budget=4" in unparsed_reason(rule.measure(split, 5), rule)
    assert "never ended ('[/r]'" in unparsed_reason(Thinking(3, 7, False), rule)


def test_section_tokens_counts_through_the_last_end_marker():
    pieces = ["<think>", "neg", "ative", "</", "think>", "pos", "itive"]
    decode = "".join
    rule = ThinkingRule()
    assert rule.section_tokens(pieces, decode) == 5
    assert rule.section_tokens(pieces[:3], decode) == 3  # unfinished: every token generated
    assert rule.section_tokens(["pos", "itive"], decode) is None
    twice = ["<think>", "a", "</think>", "b", "</think>", "c"]
    assert rule.section_tokens(twice, decode) == 5


@pytest.mark.parametrize("arguments, message", [
    ({"thinking": "maybe"}, "model argument thinking must be one of"),
    ({"think_end_token": " "}, "think_end_token must be a non-empty marker"),
    ({"think_start_token": "|", "think_end_token": "|"}, "two different markers"),
    ({"thinking": "off", "thinking_budget": "10"}, "thinking_budget needs thinking=auto or thinking=on"),
    ({"thinking_budget": "0"}, "thinking_budget must be >= 1"),
])
def test_bad_thinking_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        ThinkingRule.from_arguments(dict(arguments))


@pytest.mark.parametrize("thinking", [{"thinking": "on"}, {"thinking_budget": "64"}])
def test_log_probability_scoring_with_thinking_is_refused(thinking):
    from StaICC.backends.registry import make_backend
    with pytest.raises(ValueError, match="scoring=sequence cannot have: log-probability scoring reads the labels "
                                         "right after the prompt"):
        make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", scoring="sequence", **thinking)
    make_backend("openai", base_url="http://127.0.0.1:9/v1", model="m", scoring="generate", **thinking)


# ----------------------------------------------------------------------------------------- real models
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from StaICC.backends.registry import make_backend  # noqa: E402
from openai_reference_server import ReferenceServer  # noqa: E402
from thinking_model import SECTION_TOKENS, save_thinking_model, thinking_pair  # noqa: E402

PROMPTS = ["Review: a gripping, funny film. Sentiment: ", "Review: dull, slow and far too long. Sentiment: "]


def requests():
    return [Request(p, LABELS, dataset="toy", query_index=i) for i, p in enumerate(PROMPTS)]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_thinking_model(str(tmp_path_factory.mktemp("thinking") / "model"))


def hf(model_dir, **arguments):
    return make_backend("hf", pretrained=model_dir, scoring="generate", **arguments)


def test_hf_reads_the_answer_after_the_thinking_section(model_dir):
    backend = hf(model_dir)
    for answer in backend.score(requests()):
        assert answer.text == "<think>negative</think>positive"
        assert (answer.prediction, answer.parsed) == (POSITIVE, True)
        assert answer.thinking == Thinking(len("negative"), SECTION_TOKENS, True)
    assert backend.identity()["thinking"] == {"mode": "auto", "start": "<think>", "end": "</think>", "budget": None}
    # without the rule, the label named while thinking is read as the answer
    off = hf(model_dir, thinking="off").score(requests())
    assert [(a.prediction, a.thinking) for a in off] == [(NEGATIVE, None)] * 2


def test_hf_unfinished_and_over_budget_sections_are_unparsed(model_dir):
    for answer in hf(model_dir, max_new_tokens="2").score(requests()):
        assert answer.text == "<think>negative"
        assert (answer.prediction, answer.parsed) == (UNIFORM, False)
        assert answer.thinking == Thinking(len("negative"), 2, False)
    over = hf(model_dir, max_new_tokens="1", thinking_budget=str(SECTION_TOKENS - 1))
    assert over.non_standard[-1] == "thinking budget of 2 tokens (thinking_budget=2)"
    for answer in over.score(requests()):  # limit 1 + 2 tokens: the section ends, after more than the budget
        assert answer.text == "<think>negative</think>"
        assert (answer.prediction, answer.parsed) == (UNIFORM, False)
        assert answer.thinking == Thinking(len("negative"), 3, True, over_budget=True)
    within = hf(model_dir, max_new_tokens="1", thinking_budget=str(SECTION_TOKENS)).score(requests())
    assert [(a.prediction, a.parsed, a.thinking.tokens) for a in within] == [(POSITIVE, True, 3)] * 2
    with pytest.raises(ValueError, match="is unparsed: its thinking section never ended"):
        hf(model_dir, max_new_tokens="2", unparsed="error").score(requests()[:1])


def test_hf_log_probability_scoring_is_refused_where_the_template_opens_thinking(model_dir):
    from StaICC.backends.hf import HFBackend
    model, tokenizer = thinking_pair()
    with pytest.raises(ValueError, match="thinking=on asks for a thinking section"):
        make_backend("hf", pretrained=model_dir, thinking="on")
    import copy
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                               "{% if add_generation_prompt %}assistant: <think>\n{% endif %}")
    backend = HFBackend(model, tokenizer, scoring="last_token", chat=True, model_id="thinking")
    with pytest.raises(ValueError, match="the chat template opens a thinking section"):
        backend.score(requests())
    assert len(HFBackend(model, tokenizer, scoring="last_token", chat=True, thinking="off",
                         model_id="thinking").score(requests())) == 2


def test_hf_run_records_and_summarises_thinking(model_dir, tmp_path, capsys):
    from StaICC.cli import main
    out = str(tmp_path / "run")
    code = main(["run", "--model", "hf", "--model-args", f"pretrained={model_dir},scoring=generate,max_new_tokens=2",
                 "--datasets", "rotten_tomatoes", "--limit", "5", "--output-dir", out, "--log-samples",
                 "--no-progress"])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "UNPARSED: 10 of 10 generated answers" in printed
    assert "THINKING: of 10 answers with a thinking section, 10 never closed their thinking section" in printed
    samples = [json.loads(line) for line in pathlib.Path(out, "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(samples) == 10
    assert all(s["thinking"] == {"chars": 8, "tokens": 2, "finished": False, "over_budget": False} for s in samples)
    metadata = load_json(os.path.join(out, "results.json"))["benchmarks"]["Normal"]["metadata"]
    assert metadata["thinking"] == {"rotten_tomatoes": {"answers": 10, "unfinished": 10, "over_budget": 0,
                                                        "chars": 80, "tokens": 20, "counted": 10}}
    assert metadata["unparsed_answers"] == {"rotten_tomatoes": 10}
    # the Every Eval Ever export carries the thinking section as the reasoning trace, and reads back whole
    from StaICC.report.runs import load_run
    exported = str(tmp_path / "eee")
    assert main(["export", out, "--format", "eee", "-o", exported, "--no-intervals"]) == 0
    capsys.readouterr()
    (instances,) = pathlib.Path(exported).glob("data/staicc/*/*/*_samples.jsonl")
    first = json.loads(instances.read_text(encoding="utf-8").splitlines()[0])
    assert first["output"] == {"raw": ["<think>negative"], "reasoning_trace": ["negative"]}
    assert first["input"]["choices"] == ["negative", "positive"]  # a generative, limited run keeps the label words
    assert first["answer_attribution"][0]["extraction_method"].startswith("unparsed")
    back = load_run(exported).parts["Normal"].records["rotten_tomatoes"]
    assert [(r["text"], r["thinking"], r["parsed"]) for r in back] == \
        [(s["text"], s["thinking"], s["parsed"]) for s in samples]


# ------------------------------------------------------------------- a real OpenAI-protocol server
@pytest.fixture(scope="module")
def servers():
    model, tokenizer = thinking_pair()
    with ReferenceServer(model, tokenizer, name="thinker") as inline, \
            ReferenceServer(model, tokenizer, name="thinker", reasoning_parser=True) as apart:
        yield {"inline": inline, "apart": apart}


def openai(server, **arguments):
    return make_backend("openai", base_url=server.base_url, model="thinker", scoring="generate", retries="0",
                        **arguments)


@pytest.mark.parametrize("chat", ["false", "true"])
def test_openai_reads_the_answer_after_an_inline_thinking_section(servers, chat):
    answers = openai(servers["inline"], chat=chat).score(requests())
    for answer in answers:
        assert answer.text == "<think>negative</think>positive"
        assert (answer.prediction, answer.parsed) == (POSITIVE, True)
        assert answer.thinking == Thinking(8, None, True)  # the server reports no token count
    unfinished = openai(servers["inline"], chat=chat, max_tokens="2").score(requests())
    assert [(a.text, a.prediction, a.parsed) for a in unfinished] == [("<think>negative", UNIFORM, False)] * 2
    off = openai(servers["inline"], chat=chat, thinking="off").score(requests())
    assert [a.prediction for a in off] == [NEGATIVE] * 2


def test_openai_reads_reasoning_returned_apart_and_its_token_count(servers):
    server = servers["apart"]
    answers = openai(server, chat="true").score(requests())
    for answer in answers:
        assert answer.text == "<think>negative</think>positive"
        assert (answer.prediction, answer.parsed) == (POSITIVE, True)
        assert answer.thinking == Thinking(8, SECTION_TOKENS, True)
    unfinished = openai(server, chat="true", max_tokens="2").score(requests())
    assert [(a.text, a.parsed, a.thinking) for a in unfinished] == [("<think>negative", False, Thinking(8, 2, False))] * 2
    over = openai(server, chat="true", max_tokens="1", thinking_budget="2").score(requests())
    assert server.bodies[-1]["max_tokens"] == 3  # the answer's limit plus the budget
    assert [(a.parsed, a.thinking) for a in over] == [(False, Thinking(8, 3, True, over_budget=True))] * 2
    assert [a.prediction for a in openai(server, chat="true", thinking="off").score(requests())] == [POSITIVE] * 2


def test_openai_run_over_http_counts_unfinished_sections_as_unparsed(servers, tmp_path, capsys):
    from StaICC.cli import main
    out = str(tmp_path / "run")
    args = f"base_url={servers['apart'].base_url},model=thinker,scoring=generate,chat=true,max_tokens=2"
    assert main(["run", "--model", "openai", "--model-args", args, "--datasets", "rotten_tomatoes", "--limit", "5",
                 "--output-dir", out, "--log-samples", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "UNPARSED: 10 of 10 generated answers" in printed
    assert "THINKING: of 10 answers with a thinking section, 10 never closed their thinking section" in printed
    metadata = load_json(os.path.join(out, "results.json"))["benchmarks"]["Normal"]["metadata"]
    assert metadata["thinking"]["rotten_tomatoes"] == {"answers": 10, "unfinished": 10, "over_budget": 0, "chars": 80,
                                                       "tokens": 20, "counted": 10}
    assert main(["run", "--model", "openai", "--model-args", args.replace("max_tokens=2", "max_tokens=8"),
                 "--datasets", "rotten_tomatoes", "--limit", "5", "--output-dir", out, "--overwrite",
                 "--log-samples", "--no-progress"]) == 0
    samples = [json.loads(line) for line in pathlib.Path(out, "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(s["predicted"], s["parsed"], s["thinking"]["tokens"]) for s in samples} == {(1, True, 3)}


# ----------------------------------------------------------- the vllm backend, on a stand-in engine
class ThinkingEngine:
    """``vllm.LLM``'s ``generate`` / ``get_tokenizer`` shapes (vLLM cannot run here), decoding the forced model
    greedily and stopping at its end-of-sequence token as vLLM does."""

    def __init__(self):
        self.model, self.tokenizer = thinking_pair()
        self.limits = []

    def get_tokenizer(self):
        return self.tokenizer

    def generate(self, prompts, params, **_options):
        from types import SimpleNamespace
        self.limits.append(params.max_tokens)
        outputs = []
        for prompt in prompts:
            ids, generated = list(self.tokenizer(prompt)["input_ids"]), []
            with torch.inference_mode():
                while len(generated) < params.max_tokens:
                    generated.append(int(torch.argmax(self.model(input_ids=torch.tensor([ids + generated])).logits[0, -1])))
                    if generated[-1] == self.tokenizer.eos_token_id:
                        break
            text = self.tokenizer.decode(generated, skip_special_tokens=True)
            outputs.append(SimpleNamespace(outputs=[SimpleNamespace(text=text, token_ids=generated)]))
        return outputs


def test_vllm_counts_the_generated_tokens_of_the_section():
    from types import SimpleNamespace

    from StaICC.backends.vllm import VLLMBackend

    def params(**kwargs):
        return SimpleNamespace(**kwargs)
    engine = ThinkingEngine()
    answers = VLLMBackend(engine, params, scoring="generate", model_id="thinker").score(requests())
    assert [(a.prediction, a.thinking) for a in answers] == [(POSITIVE, Thinking(8, SECTION_TOKENS, True))] * 2
    over = VLLMBackend(engine, params, scoring="generate", max_new_tokens=1, thinking_budget=2, model_id="thinker")
    assert [(a.parsed, a.thinking.over_budget) for a in over.score(requests())] == [(False, True)] * 2
    assert engine.limits == [8, 3]
    with pytest.raises(ValueError, match="thinking=on asks for a thinking section"):
        VLLMBackend(engine, params, thinking="on", model_id="thinker")
