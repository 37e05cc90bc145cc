"""Prior matching: rescale every prediction so that the mean prediction on labelled calibration prompts
matches the calibration set's label frequencies.

A one-step prior correction (Saerens, Latinne and Decaestecker, 2002, "Adjusting the outputs of a
classifier to new a priori probabilities"), applied to in-context learning: the model's mean predicted
distribution over prompts whose queries are real calibration rows is p̄, the calibration set's label
frequencies are π, and each test prediction p becomes p·π/p̄, normalised.  Contextual calibration
divides by the prediction for content-free queries and aims at a uniform prior; this estimates the
model's bias on real inputs and keeps the data's own prior.

Run it beside the built-in methods:

    staicc run --model hf --model-args pretrained=DIR --methods vanilla,contextual,examples/methods/prior_matching.py
"""
import math

NAME = "prior_matching"
#: prompts of k demonstrations and one labelled query each, all from the calibration set
CALIBRATION_NUMBER = 64
PARAMETERS = {"calibration_number": CALIBRATION_NUMBER}


def _draws(data):
    """(demonstration rows, query row) of each calibration prompt: k + 1 rows drawn from the standard's
    stream, with repetition, as hidden calibration and kNN prompting draw theirs."""
    rows, k = data.calibration_set, data.k
    indexes = data.fresh_stream().index_set(CALIBRATION_NUMBER * (k + 1), len(rows), allow_repetition=True)
    for i in range(CALIBRATION_NUMBER):
        chunk = indexes[i * (k + 1):(i + 1) * (k + 1)]
        yield [rows[j] for j in chunk[:k]], rows[chunk[k]]


def requests(data):
    """The calibration prompts: their label probabilities are asked."""
    return [data.write_prompt(demonstrations, query[0]) for demonstrations, query in _draws(data)]


def _probabilities(row):
    """A row of label scores as probabilities (logits are softmaxed)."""
    if min(row) >= 0 and abs(math.fsum(row) - 1) <= 1e-6:
        return list(row)
    peak = max(row)
    exps = [math.exp(v - peak) for v in row]
    total = math.fsum(exps)
    return [e / total for e in exps]


def train(data, answers):
    """The weight of each label: its frequency in the calibration set (add-one smoothed) over the mean
    predicted probability of the calibration prompts."""
    labels = list(data.calibration_set.get_label_space())
    counts = [1] * len(labels)
    for i in range(len(data.calibration_set)):
        counts[labels.index(data.calibration_set[i][1])] += 1
    prior = [c / sum(counts) for c in counts]
    rows = [_probabilities(row) for row in answers]
    mean = [math.fsum(column) / len(rows) for column in zip(*rows)]
    return [p / max(m, 1e-12) for p, m in zip(prior, mean)]


def apply(weights, answers):
    """Each query's probabilities times the weights, normalised."""
    out = []
    for row in answers["labels"]:
        scaled = [p * w for p, w in zip(_probabilities(row), weights)]
        total = math.fsum(scaled)
        out.append([s / total for s in scaled])
    return out
