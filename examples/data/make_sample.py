"""Regenerate the small synthetic sample datasets of examples/ (deterministic, no downloads).

    python examples/data/make_sample.py

writes, next to this script:

* ``sentiment.csv``: 600 movie-review sentences, columns ``id,text,label`` with the
  labels ``negative`` / ``neutral`` / ``positive`` (about 8% of the labels are flipped
  on purpose, and a quarter of the sentences contrast two opinions, so that the task is
  not trivial);
* ``nli.jsonl``: 300 premise/hypothesis pairs, ``{"premise", "hypothesis", "label"}``
  with integer labels 0 = entailment, 1 = neutral, 2 = contradiction.

The texts are made up from word lists with a small linear congruential generator (the
StaICC standard's constants), so the files are byte-identical on every platform and
Python version.
"""
import csv
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class LCG:
    """x <- (1664525 x + 1013904223) mod 2^32; floats are x / 2^32."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def below(self, n: int) -> int:
        self.state = (1664525 * self.state + 1013904223) % 2 ** 32
        return self.state * n // 2 ** 32

    def choice(self, items):
        return items[self.below(len(items))]


SUBJECTS = ["The plot", "The acting", "This film", "The soundtrack", "The director's latest work", "The cast",
            "The script", "The ending", "The cinematography", "The dialogue", "This sequel", "The lead performance"]
OPINIONS = {
    "positive": ["is wonderful", "was a real delight", "kept me smiling", "is brilliant", "felt fresh and moving",
                 "is beautifully made", "won me over", "is a joy to watch", "deserves every award",
                 "is clever and warm"],
    "negative": ["is dull", "was a waste of time", "felt clumsy", "is painfully boring", "left me cold",
                 "is a mess", "made me check my watch", "is lazy and predictable", "falls completely flat",
                 "is hard to sit through"],
    "neutral": ["is fine, nothing more", "was about average", "is okay", "runs a little over two hours",
                "was released last spring", "is similar to the first one", "is neither good nor bad",
                "follows the usual formula", "is what you would expect", "was shot in Canada"],
}
ENDINGS = [".", " overall.", ", honestly.", " in my view.", " from start to finish.", ", as far as I can tell.",
           " this time.", "!"]
LABELS = ["negative", "neutral", "positive"]

SCENES = [  # (premise, entailed, neutral, contradicted)
    ("{p} is playing a guitar on a stage", "{p} is making music", "{p} is a famous musician",
     "nobody is playing an instrument"),
    ("{p} is riding a bicycle down a hill", "{p} is outdoors", "{p} is late for work", "{p} is sleeping in bed"),
    ("{p} is cooking pasta in a small kitchen", "{p} is preparing food", "{p} is cooking for a party",
     "the kitchen is empty"),
    ("{p} is reading a newspaper on a bench", "{p} is sitting down", "{p} is waiting for a bus",
     "{p} is swimming in the sea"),
    ("{p} is painting a wall blue", "the wall is being painted", "{p} is a professional painter",
     "{p} is painting a wall red"),
    ("{p} is walking a dog in the park", "an animal is in the park", "the dog belongs to a neighbour",
     "{p} is alone at home"),
    ("{p} is climbing a steep rock face", "{p} is climbing", "{p} is training for a competition",
     "{p} is lying on a sofa"),
    ("{p} is buying apples at a market", "{p} is shopping", "the apples are on sale", "{p} is selling cars"),
    ("{p} is typing on a laptop in a cafe", "{p} is using a computer", "{p} is writing a novel",
     "{p} is asleep in a cafe"),
    ("{p} is swimming laps in a pool", "{p} is in the water", "{p} swims every morning",
     "the pool has no water"),
]
PEOPLE = ["A man", "A woman", "A child", "An old man", "A young woman", "A teenager", "A tall man", "A girl",
          "A boy", "A nurse"]


def sentiment_rows(count: int = 600):
    rng = LCG(20240601)
    rows = []
    for i in range(count):
        label = LABELS[rng.below(3)]
        text = f"{rng.choice(SUBJECTS)} {rng.choice(OPINIONS[label])}"
        if rng.below(4) == 0:  # a contrast: the second clause decides
            other = rng.choice([l for l in LABELS if l != label])
            subject = rng.choice(SUBJECTS).lower()
            text = f"{rng.choice(SUBJECTS)} {rng.choice(OPINIONS[other])}, but {subject} {rng.choice(OPINIONS[label])}"
        text += rng.choice(ENDINGS)
        if rng.below(100) < 8:  # label noise
            label = rng.choice([l for l in LABELS if l != label])
        rows.append({"id": i, "text": text, "label": label})
    return rows


def nli_rows(count: int = 300):
    rng = LCG(31337)
    rows = []
    for _ in range(count):
        premise, entailed, neutral, contradicted = rng.choice(SCENES)
        person = rng.choice(PEOPLE)
        label = rng.below(3)
        hypothesis = (entailed, neutral, contradicted)[label]
        pronoun = person.lower()
        text_premise = premise.format(p=person) + "."
        text_hypothesis = hypothesis.format(p=pronoun)
        rows.append({"premise": text_premise, "hypothesis": text_hypothesis[0].upper() + text_hypothesis[1:] + ".",
                     "label": label})
    return rows


def main() -> None:
    with open(os.path.join(HERE, "sentiment.csv"), "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["id", "text", "label"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(sentiment_rows())
    with open(os.path.join(HERE, "nli.jsonl"), "w", encoding="utf-8", newline="\n") as fh:
        for row in nli_rows():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {os.path.join(HERE, 'sentiment.csv')} (600 rows) and {os.path.join(HERE, 'nli.jsonl')} (300 rows)")


if __name__ == "__main__":
    main()
