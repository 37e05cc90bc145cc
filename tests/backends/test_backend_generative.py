"""The text -> label parser, the unparsed policy and the hooks of generative backends."""
import pytest

from StaICC.backends.generative import (AnswerMapper, LabelParser, UnparsedAnswerError, default_messages,
                                        parse_aliases, parse_label, words)
from StaICC.requests import Answer, Request

SENTIMENT = ("negative", "positive")
NLI = ("entailment", "not entailment")

PARSE_TABLE = [
    # (text, label space, expected index or None)
    ("positive", SENTIMENT, 1),
    ("Positive.", SENTIMENT, 1),
    (" POSITIVE", SENTIMENT, 1),
    ("  negative\n", SENTIMENT, 0),
    ("The answer is negative", SENTIMENT, 0),
    ("neutral/positive", SENTIMENT, 1),
    ("negative/positive", SENTIMENT, 0),           # earliest position wins
    ("positive, not negative", SENTIMENT, 1),
    ("", SENTIMENT, None),
    ("   \n\t", SENTIMENT, None),
    ("I cannot tell.", SENTIMENT, None),
    ("positively", SENTIMENT, None),               # a label is a whole word, never a word's prefix
    ("not entailment", NLI, 1),                    # longest phrase at the earliest position
    ("entailment", NLI, 0),
    ("Not\nEntailment!", NLI, 1),                   # newlines and punctuation separate words
    ("not-entailment", NLI, 1),
    ("Answer:\n\nnegative", SENTIMENT, 0),
    ("«Positive»", SENTIMENT, 1),
    ("ＰＯＳＩＴＩＶＥ", SENTIMENT, 1),              # full-width forms (NFKC)
    ("Négatif", ("négatif", "positif"), 0),         # accents kept, case folded
    ("STRASSE", ("straße", "weg"), 0),              # case folding, not lowercasing
    ("答案是积极", ("积极", "消极"), 0),               # CJK: each ideograph is a word
    ("positive\u200bnegative", SENTIMENT, 1),        # a zero-width space separates words
]


@pytest.mark.parametrize("text, labels, expected", PARSE_TABLE)
def test_parser_table(text, labels, expected):
    assert parse_label(text, labels) == expected


def test_label_that_is_a_prefix_of_another_label():
    labels = ("pos", "positive", "neg")
    assert parse_label("positive", labels) == 1
    assert parse_label("pos", labels) == 0
    assert parse_label("pos positive", labels) == 0


def test_aliases_and_their_conflicts():
    parser = LabelParser(SENTIMENT, {"positive": ["great", "thumbs up"]})
    assert parser.parse("Thumbs up!") == 1
    assert parser.parse("It was great") == 1
    assert parser.parse("great, but negative") == 1  # earliest mention
    with pytest.raises(ValueError, match="names both"):
        LabelParser(SENTIMENT, {"positive": ["negative"]})
    with pytest.raises(ValueError, match="not in the label space"):
        LabelParser(SENTIMENT, {"neutral": ["meh"]})
    with pytest.raises(ValueError, match="no letter or digit"):
        LabelParser(("?", "!"))


def test_words_normalises():
    assert [w for w, _ in words("Hello,  WORLD!\n42")] == ["hello", "world", "42"]


def test_alias_strings_from_the_command_line():
    assert parse_aliases("positive:great|good;negative:bad") == {"positive": ("great", "good"), "negative": ("bad",)}
    assert parse_aliases('{"positive": ["great"]}') == {"positive": ("great",)}
    with pytest.raises(ValueError, match="aliases"):
        parse_aliases("positive")


def request(prompt="Review: fine\nSentiment:", labels=SENTIMENT):
    return Request(prompt, labels, benchmark="Normal", dataset="SST-2", query_index=7)


def test_policies_for_unparsed_answers():
    assert AnswerMapper("uniform").answer(request(), "Positive.") == Answer([0.0, 1.0], "Positive.", True)
    assert AnswerMapper("uniform").answer(request(), "maybe") == Answer([0.5, 0.5], "maybe", False)
    assert AnswerMapper("label:0").answer(request(), "maybe") == Answer([1.0, 0.0], "maybe", False)
    with pytest.raises(UnparsedAnswerError, match="SST-2.*query 7"):
        AnswerMapper("error").answer(request(), "maybe")
    with pytest.raises(ValueError, match="has 2 labels"):
        AnswerMapper("label:5").answer(request(), "maybe")
    with pytest.raises(ValueError, match="unparsed must be one of"):
        AnswerMapper("ignore")


def test_postprocess_and_answer_hooks():
    mapper = AnswerMapper(postprocess=lambda text, labels: 0 if text.startswith("-") else None)
    assert mapper.answer(request(), "--").prediction == [1.0, 0.0]
    assert mapper.answer(request(), "positive").parsed is False  # the hook replaces the parser
    with pytest.raises(ValueError, match="postprocess hook returned 9"):
        AnswerMapper(postprocess=lambda text, labels: 9).answer(request(), "x")
    seen = []

    def hook(req, text, answer):
        seen.append((req.query_index, text))
        return Answer(answer.prediction, text.upper(), answer.parsed)
    assert AnswerMapper(answer_hook=hook).answer(request(), "negative").text == "NEGATIVE"
    assert seen == [(7, "negative")]
    with pytest.raises(TypeError, match="answer_hook returned"):
        AnswerMapper(answer_hook=lambda r, t, a: 1).answer(request(), "negative")


def test_default_chat_messages():
    assert default_messages(request(), "Answer with one word.") == [
        {"role": "system", "content": "Answer with one word."},
        {"role": "user", "content": "Review: fine\nSentiment:"}]
    with pytest.raises(ValueError, match="noisy-channel"):
        default_messages(Request(("a", "b"), SENTIMENT))


def test_api_call_kernel_warns_on_inexact_answers_and_can_parse():
    from StaICC.prefabricate_inference.model_kernel import standard_ICL_inference_with_API_call as kernel
    e = 2.718281828459045
    with pytest.warns(UserWarning, match="reads label 'positive'.*parse=True"):
        assert kernel(lambda p: " Positive.", "x", list(SENTIMENT)) == [0.5, 0.5]  # the standard's number
    with pytest.warns(UserWarning, match="finds no label"):
        assert kernel(lambda p: "unsure", "x", list(SENTIMENT)) == [0.5, 0.5]
    assert kernel(lambda p: " Positive.", "x", list(SENTIMENT), parse=True) == pytest.approx([1 / (1 + e), e / (1 + e)])
    assert kernel(lambda p: "negative", "x", list(SENTIMENT)) == pytest.approx([e / (1 + e), 1 / (1 + e)])
