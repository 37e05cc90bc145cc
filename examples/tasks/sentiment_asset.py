"""An LLMeBench-style task asset: the sentiment task of ``sentiment.toml`` as Python, plus code.

StaICC imports this file from the path you give (``staicc run --tasks
examples/tasks/sentiment_asset.py``): it is your code and it runs, as any script you start
would.  What a data file cannot say:

* ``post_process(text)``: maps a generated answer (``scoring = "generate"``) to a label
  word or index, or None when it names none;
* ``score(predictions, references)``: an evaluator over label words, reported beside
  Normal's metrics (here each label's F1 and the share of "neutral" predictions).

StaICC writes every prompt from the template keys (so that Template_sens and the other
diagnoses can vary them): an asset gives ``config()["template"]``, not ``prompt()``.
"""


def metadata():
    return {"author": "StaICC examples", "model": "any", "description": "movie-review sentiment with an evaluator"}


def config():
    return {
        "name": "movie_sentiment",
        "description": "600 synthetic movie-review sentences (examples/data/sentiment.csv), three labels",
        "data": {"path": "../data/sentiment.csv", "input_columns": ["text"], "label_column": "label",
                 "deduplicate": True},
        "labels": {"words": ["negative", "neutral", "positive"],
                   "aliases": {"positive": ["good", "great"], "negative": ["bad", "awful"]}},
        "template": {
            "input_text_prefixes": ["review: "],
            "label_prefix": "sentiment: ",
            "alternates": {
                "instruction": ["", "Classify the sentiment of the review. ",
                                "Is the following movie review positive, neutral or negative? "],
                "input_text_prefixes": [["review: "], ["text: "], ["Review: "]],
                "label_prefix": ["sentiment: ", "label: ", "Sentiment: "],
                "label_affix": ["\n", " ", "\t"],
            },
        },
        "run": {"benchmarks": "all"},
    }


def post_process(text):
    """The first line of the answer, lower-cased, if it is a label word; else None (the unparsed policy)."""
    first = text.strip().split("\n")[0].strip(" .!").lower()
    return first if first in ("negative", "neutral", "positive") else None


def score(predictions, references):
    """Per-label F1 and the share of neutral predictions (label words in, numbers out)."""
    out = {}
    for label in ("negative", "neutral", "positive"):
        tp = sum(p == label and r == label for p, r in zip(predictions, references))
        predicted = sum(p == label for p in predictions)
        actual = sum(r == label for r in references)
        out[f"f1_{label}"] = 2 * tp / (predicted + actual) if predicted + actual else 0.0
    out["neutral_share"] = sum(p == "neutral" for p in predictions) / len(predictions)
    return out
