"""The hand-wired route of every built-in method on a tiny random Llama: what a user writes without ``--methods``.

``calibration.train(exp.prompt_former.write_prompt_from_dataline, feedforward, exp.calibration_set(),
k=exp.get_k())``, then ``exp.auto_run`` with the calibrated inference, per dataset (batch calibration:
``batch_calibration`` over each pass; the noisy channel: the experimentor in noisy-channel mode).  The
scorer computes each prompt alone (``rows_per_forward=1``, ``packing="rows"``), so an answer does not
depend on which other prompts share its batch, and both routes can be compared to the last bit.
"""
import functools

from backend_helpers import tiny_pair

DATASETS = ("TREC", "rotten_tomatoes", "SST5")
LIMIT = 5
CALIBRATION_NUMBER = 16
METHODS = ("vanilla", "noisy_channel", "contextual", "domain", "batch", "knn", "knn_centroid", "hidden")
#: the calibrations fitted on calibration queries' label probabilities (StaICC.methods.fitted)
FITTED_METHODS = ("generative", "ucpa", "bcl", "prototypical", "sucpa", "temperature", "platt", "supervised", "linc")
#: those fitted by default on the test pass itself (cross-fitted over 5 folds; UCPA transductive): no prompts of their own
CROSSFIT_METHODS = ("ucpa", "sucpa", "temperature", "platt", "supervised", "linc")


def scorer():
    from StaICC.backends.causal_lm import CausalLMScorer
    model, tokenizer = tiny_pair("llama")
    return CausalLMScorer(model, tokenizer, rows_per_forward=1, packing="rows", numerics="invariant")  # the backend's default


def backend():
    """The hf backend over the same model, computing each prompt alone as the scorer above does."""
    from StaICC.backends.hf import HFBackend
    model, tokenizer = tiny_pair("llama")
    return HFBackend(model, tokenizer, batch_size=1, packing="rows", model_id="tiny-llama-test")


def _inference(name: str, experimentor, score):
    """The inference function the hand-wired route runs ``experimentor`` with, trained first."""
    from StaICC.methods.calibration import (batch_calibration, contextual_calibration, domain_calibration,
                                            hidden_calibration, knn_prompt_centroid, knn_prompting)
    if name in ("vanilla", "noisy_channel"):
        return score
    if name == "batch":
        return lambda prompt, label_space: batch_calibration(score(prompt=prompt, label_space=label_space))
    if name in FITTED_METHODS:
        return _fitted_inference(name, experimentor, score)
    if name == "anchors":
        return _anchors_inference(experimentor)
    if name == "surprise":
        return _surprise_inference(experimentor, score)
    labels = experimentor.get_label_space()
    calibration, feedforward = {
        "contextual": (contextual_calibration(labels), score),
        "domain": (domain_calibration(labels), score),
        "hidden": (hidden_calibration(labels), score.feedforward_with_hidden_state),
        "knn": (knn_prompting(labels), score.feedforward_with_full_vocab),
        "knn_centroid": (knn_prompt_centroid(labels), score.feedforward_with_full_vocab),
    }[name]
    calibration.train(experimentor.prompt_former.write_prompt_from_dataline, feedforward,
                      experimentor.calibration_set(), calibration_number=CALIBRATION_NUMBER, k=experimentor.get_k())
    return score.calibrated(calibration.inference)


def _fitted_inference(name: str, experimentor, score):
    """A fitted calibration trained with the scorer as its feedforward; BCL over each pass, the others per prompt."""
    import StaICC.methods.calibration as c
    labels = experimentor.get_label_space()
    calibration = {"generative": lambda: c.generative_calibration(labels), "ucpa": lambda: c.prior_adaptation(labels),
                   "bcl": lambda: c.batch_calibration_learnt(labels),
                   "prototypical": lambda: c.prototypical_calibration(labels),
                   "sucpa": lambda: c.prior_adaptation(labels, supervised=True),
                   "temperature": lambda: c.temperature_scaling(labels), "platt": lambda: c.platt_scaling(labels),
                   "supervised": lambda: c.supervised_calibration(labels),
                   "linc": lambda: c.linc_calibration(labels)}[name]
    if name in CROSSFIT_METHODS:  # the pass's own rows and the experimentor's true labels, each fold by the others
        from StaICC.methods.calibration.labelled import crossfit_rows
        truth = experimentor.ground_truth()
        return lambda prompt, label_space: crossfit_rows(calibration, score(prompt=prompt, label_space=label_space),
                                                         truth[:len(prompt)], 5, transductive=name == "ucpa")
    calibration = calibration()
    calibration.train(experimentor.prompt_former.write_prompt_from_dataline, score, experimentor.calibration_set(),
                      calibration_number=CALIBRATION_NUMBER, k=experimentor.get_k())
    if name == "bcl":
        return lambda prompt, label_space: calibration.transform_rows(score(prompt=prompt, label_space=label_space))
    return score.calibrated(calibration.inference)


def anchor_feedforward(prompt, label_space):
    """One prompt's anchors answer through the attention hook, float32 as the backend answers it."""
    from StaICC.backends.hf_anchors import anchor_answer
    from StaICC.requests import state_vector
    model, tokenizer = tiny_pair("llama")
    return state_vector(anchor_answer(model, tokenizer, prompt, label_space))


def _anchors_inference(experimentor):
    """Anchor re-weighting trained on the calibration queries' anchors answers, applied to each prompt's own."""
    from StaICC.methods.calibration.anchors import anchor_reweighting
    calibration = anchor_reweighting(experimentor.get_label_space())
    calibration.train(experimentor.prompt_former.write_prompt_from_dataline, anchor_feedforward,
                      experimentor.calibration_set(), calibration_number=CALIBRATION_NUMBER, k=experimentor.get_k())
    return lambda prompt, label_space: calibration.transform_rows([anchor_feedforward(p, label_space) for p in prompt])


def _surprise_inference(experimentor, score):
    """Surprise calibration by hand: the calibration queries and their prefixes scored, the fit, then each test
    query's accumulated surprise from its own demonstrations' prefixes (the experimentor's demonstration indexes)."""
    import math

    from StaICC.methods.calibration.base import _sample_indexes
    from StaICC.methods.calibration.surprise import surprise_calibration
    write, table, k = experimentor.prompt_former.write_prompt_from_dataline, experimentor.calibration_set(), experimentor.get_k()
    space, labels = list(table.get_label_space()), experimentor.get_label_space()
    indexes = _sample_indexes(CALIBRATION_NUMBER * (k + 1), len(table))
    probabilities, truths, contexts = [], [], []
    for i in range(CALIBRATION_NUMBER):
        rows = [table[j] for j in indexes[i * (k + 1):i * (k + 1) + k]]
        inputs, label = table[indexes[i * (k + 1) + k]]
        probabilities.append(score(prompt=write(rows, inputs), label_space=labels))
        truths.append(space.index(label))
        contexts.append(([score(prompt=write(rows[:j], rows[j][0]), label_space=labels) for j in range(k)],
                         [space.index(r[1]) for r in rows]))
    calibration = surprise_calibration(labels)
    calibration.fit(probabilities, truths, contexts)
    demos = experimentor.demonstration_set()
    histories = []
    for chosen in experimentor.work().plan.demonstrations:
        rows = [demos[j] for j in chosen]
        h = [0.0] * len(labels)
        for j, row in enumerate(rows):
            p = score(prompt=write(rows[:j], row[0]), label_space=labels)
            h = [calibration.decay * v for v in h]
            h[space.index(row[1])] += -math.log(max(p[space.index(row[1])], 1e-12))
        histories.append(h)
    return lambda prompt, label_space: calibration.transform(score(prompt=prompt, label_space=label_space),
                                                             histories[:len(prompt)])


@functools.lru_cache(maxsize=None)
def hand_wired(benchmark: str = "Normal", methods=METHODS):
    """{method: {dataset: (result, rows)}} of the hand-wired route on ``benchmark``."""
    import StaICC
    from StaICC.engine.selection import QuerySubset
    score = scorer()
    out = {}
    for name in methods:
        bench = getattr(StaICC, benchmark)(datasets=list(DATASETS), test_items=QuerySubset.first(LIMIT),
                                           noisy_channel=name == "noisy_channel")
        out[name] = {}
        for i, dataset in enumerate(DATASETS):
            experimentor = bench[i]
            # the scorer's rows are a model's floating-point probabilities: said so, they meet the exact-sum rule
            # as the hf backend's do (the softmax branch always), whatever their last bits
            result, _, outputs = experimentor.auto_run(forward_inference=_inference(name, experimentor, score),
                                                       batched_inference=True, return_outputs=True,
                                                       prediction_kind="probabilities")
            out[name][dataset] = (result, outputs["prob."])
    return out
