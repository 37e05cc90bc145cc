#!/usr/bin/env python3
"""Record golden results by running the ORIGINAL StaICC 0.1.1 as a black box.

Usage (the recorder itself runs under any Python; each configuration is run by
``--python`` in a fresh process, with only the original package importable)::

    python3 -m venv /tmp/origvenv
    /tmp/origvenv/bin/pip install StaICC-0.1.1-py3-none-any.whl
    python tools/record_golden.py --python /tmp/origvenv/bin/python
    python tools/record_golden.py --python /tmp/origvenv/bin/python --only normal_k2_logits
    python tools/record_golden.py --python /tmp/origvenv/bin/python --dump-prompts /tmp/prompts

Only the original's public API is used (spec STANDARD.md: benchmark constructors,
``bench[i]``, ``auto_run``, ``prompt_set``, ``example``, ``set_k``,
``set_demonstration_sampler``, the in/out-of-domain modes and the prompt writer's
mutators).  Every configuration runs in a FRESH process and only the FIRST call on a
fresh object is observed (the original's runs are not idempotent, spec §11.2).

Each configuration writes ``tests/reference/golden/<id>.json`` holding the
configuration itself and what the original produced: per dataset, the SHA-256 of
the prompts passed to the inference in call order (spec §10.3: joined by U+0000, a
noisy-channel list first joined by U+0001), a 6-hex-digit hash per prompt (to
locate the first differing prompt), the label spaces received, and the full result
dicts.  ``tests/subbenchmarks/test_golden.py`` replays the same configurations on our package with
the very same driver code (:func:`run_config`), which therefore must stay stdlib-only
and must use only API that both packages share.

This file never imports our package in recording mode, and our package never
depends on the original.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GOLDEN_DIR = os.path.join(REPO, "tests", "reference", "golden")

# dataset name -> loader class name in StaICC.util.hgf_dataset_loader (datasets.json "loader")
LOADERS = {
    "GLUE-SST2": "glue_sst2", "rotten_tomatoes": "rotten_tomatoes", "financial_phrasebank": "financial_phrasebank",
    "SST5": "sst5", "TREC": "trec", "AGNews": "agnews", "Subjective": "subjective",
    "tweet_eval_emotion": "tweet_eval_emotion", "tweet_eval_hate": "tweet_eval_hate", "hate_speech_18": "hate_speech_18",
}
# demonstration-split sizes (datasets.json "split_sizes"), for the custom samplers
DEMO_SIZE = {"financial_phrasebank": 512, "tweet_eval_emotion": 3192}
TEST_SIZE = 512

FP, RT, TREC, TEE, SST5, HS = ("financial_phrasebank", "rotten_tomatoes", "TREC", "tweet_eval_emotion", "SST5",
                               "hate_speech_18")


# ---------------------------------------------------------------------------------------------------------------
# Deterministic inference functions
# ---------------------------------------------------------------------------------------------------------------
def prompt_text(prompt):
    """A prompt as one string: a noisy-channel list is joined with U+0001 (spec §10.3)."""
    if isinstance(prompt, list):
        return "\x01".join(prompt)
    return prompt


def _softmax(v):
    m = max(v)
    e = [math.exp(x - m) for x in v]
    s = 0
    for x in e:
        s += x
    return [x / s for x in e]


def _logits(digest, n):
    return [((digest[i] / 255.0) * 4) - 2 for i in range(n)]


def f_sha(digest, n):
    """Spec §10.4 dummy: softmax of ((h[i]/255)*4)-2."""
    return _softmax(_logits(digest, n))


def f_logits(digest, n):
    """Raw logits (not probabilities): every metric softmaxes them."""
    return _logits(digest, n)


def f_int(digest, n):
    """An int label index; over hundreds of prompts every label gets predicted."""
    return int(digest[0]) % n


def f_dyadic(digest, n):
    """A probability vector whose sum is exactly 1.0 (passes the exact probability check)."""
    v = [0.0] * n
    v[digest[0] % n] += 0.5
    v[digest[1] % n] += 0.25
    v[digest[2] % n] += 0.25
    return v


FUNCTIONS = {"sha": f_sha, "logits": f_logits, "int": f_int, "dyadic": f_dyadic}


class Recorder:
    """Inference wrapper that records every prompt it receives, in call order."""

    def __init__(self, fn_name, batched=False):
        self.fn = FUNCTIONS[fn_name]
        self.batched = batched
        self.hasher = hashlib.sha256()
        self.count = 0
        self.short = []
        self.label_spaces = []
        self.calls = 0
        self.prompts = None  # filled when dumping

    def _one(self, prompt, n):
        s = prompt_text(prompt)
        data = s.encode("utf-8")
        if self.count:
            self.hasher.update(b"\x00")
        self.hasher.update(data)
        self.count += 1
        digest = hashlib.sha256(data).digest()
        self.short.append(digest.hex()[:6])
        if self.prompts is not None:
            self.prompts.append(s)
        return self.fn(digest, n)

    def __call__(self, prompt, label_space):
        self.calls += 1
        ls = list(label_space)
        if ls not in self.label_spaces:
            self.label_spaces.append(ls)
        n = len(ls)
        if self.batched:
            return [self._one(p, n) for p in prompt]
        return self._one(prompt, n)

    def summary(self):
        return {"count": self.count, "calls": self.calls, "sha256": self.hasher.hexdigest() if self.count else None,
                "short": "".join(self.short), "label_spaces": self.label_spaces}


def strings_summary(strings):
    """Hash of a list of prompts (each a str, or a noisy list), as in spec §10.3."""
    texts = [prompt_text(s) for s in strings]
    return {"count": len(texts), "sha256": hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest(),
            "short": "".join(hashlib.sha256(t.encode("utf-8")).hexdigest()[:6] for t in texts)}


# ---------------------------------------------------------------------------------------------------------------
# Deterministic data generators (custom samplers, preentered predictions)
# ---------------------------------------------------------------------------------------------------------------
def _h(*parts):
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()


def make_sampler(seed, rows, k, demo_size, distinct=True):
    out = []
    for j in range(rows):
        row, c = [], 0
        while len(row) < k:
            d = _h("sampler", seed, j, c)
            c += 1
            v = int.from_bytes(d[:4], "big") % demo_size
            if distinct and v in row:
                continue
            row.append(v)
        out.append(row)
    return out


def make_preentered(kind, seed, count, n):
    out = []
    for i in range(count):
        d = _h("pred", seed, i)
        if kind == "int":
            out.append(int(d[0]) % n)
        elif kind == "probs":
            out.append(f_sha(d, n))
        elif kind == "logits":
            out.append(f_logits(d, n))
        elif kind == "dyadic":
            out.append(f_dyadic(d, n))
        else:
            raise ValueError(kind)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------------------------
def _cfg(id, bench="Normal", datasets=(FP, RT), kwargs=None, steps=(), call="bench", fn="sha", batched=False,
         **extra):
    c = {"id": id, "bench": bench, "datasets": list(datasets), "kwargs": dict(kwargs or {}), "steps": list(steps),
         "call": call, "fn": fn, "batched": batched}
    c.update(extra)
    return c


def build_configs():
    C = []
    three = (FP, RT, TREC)
    # 1. Normal with various k and inference kinds
    for k in (0, 1, 2, 8, 16):
        C.append(_cfg(f"normal_k{k}_sha", datasets=three, kwargs={"k": k}))
    C.append(_cfg("normal_k2_logits", datasets=three, kwargs={"k": 2}, fn="logits"))
    C.append(_cfg("normal_k8_int", datasets=three, kwargs={"k": 8}, fn="int"))
    C.append(_cfg("normal_k1_sha_batched", datasets=three, kwargs={"k": 1}, batched=True))
    C.append(_cfg("normal_k16_dyadic", datasets=three, kwargs={"k": 16}, fn="dyadic"))
    C.append(_cfg("normal_k0_int_batched", datasets=(FP, TREC), kwargs={"k": 0}, fn="int", batched=True))
    C.append(_cfg("normal_k4_logits_batched", datasets=(TEE, SST5, HS), kwargs={"k": 4}, fn="logits", batched=True))
    C.append(_cfg("normal_k4_int", datasets=(TEE, SST5, HS), kwargs={"k": 4}, fn="int"))
    # 2. noisy channel
    C.append(_cfg("normal_noisy_k2_int", datasets=three, kwargs={"k": 2, "noisy_channel": True}, fn="int"))
    C.append(_cfg("normal_noisy_k2_sha", datasets=three, kwargs={"k": 2, "noisy_channel": True}))
    C.append(_cfg("normal_noisy_k0_logits_batched", datasets=(FP, TEE), kwargs={"k": 0, "noisy_channel": True},
                  fn="logits", batched=True))
    C.append(_cfg("normal_noisy_k8_dyadic", datasets=(TREC,), kwargs={"k": 8, "noisy_channel": True}, fn="dyadic"))
    # 3. in-domain / out-of-domain
    for mode in ("in", "out"):
        for k in (4, 2):
            C.append(_cfg(f"{mode}_domain_k{k}_sha", datasets=(FP, TREC), kwargs={"k": k},
                          steps=[[f"set_{mode}_of_domain_mode" if mode == "out" else "set_in_domain_mode"]],
                          call="auto_run"))
    C.append(_cfg("out_domain_k4_int_bench", datasets=(FP, TREC), kwargs={"k": 4},
                  steps=[["set_out_of_domain_mode"]], fn="int"))
    C.append(_cfg("in_domain_k8_noisy_int", datasets=(FP, TREC), kwargs={"k": 8, "noisy_channel": True},
                  steps=[["set_in_domain_mode"]], call="auto_run", fn="int"))
    C.append(_cfg("out_domain_then_reset_k4", datasets=(FP, TREC), kwargs={"k": 4},
                  steps=[["set_out_of_domain_mode"], ["reset_demonstration_sampler"]], call="auto_run"))
    C.append(_cfg("in_domain_twice_k4", datasets=(FP,), kwargs={"k": 4},
                  steps=[["set_in_domain_mode"], ["set_out_of_domain_mode"], ["set_in_domain_mode"]],
                  call="auto_run"))
    # 4. label noise
    for k in (4, 3):
        for tag, r in (("0.25", 0.25), ("0.5", 0.5), ("third", 1 / 3)):
            C.append(_cfg(f"label_noise_k{k}_r{tag}", datasets=(FP, RT), kwargs={"k": k},
                          steps=[["prompt_former.set_label_wrong_rate", r]]))
    C.append(_cfg("label_noise_k4_r1_int", datasets=(FP, TREC), kwargs={"k": 4},
                  steps=[["prompt_former.set_label_wrong_rate", 1.0]], fn="int"))
    C.append(_cfg("label_noise_k2_r0.5_noisy", datasets=(FP, TREC), kwargs={"k": 2, "noisy_channel": True},
                  steps=[["prompt_former.set_label_wrong_rate", 0.5]], call="auto_run", fn="int"))
    C.append(_cfg("label_noise_k8_r0.75_outdomain", datasets=(FP,), kwargs={"k": 8},
                  steps=[["set_out_of_domain_mode"], ["prompt_former.set_label_wrong_rate", 0.75]],
                  call="auto_run"))
    # 5. custom sampler
    for k in (4, 1):
        C.append(_cfg(f"custom_sampler_k{k}", datasets=(FP, TEE), kwargs={"k": k},
                      steps=[["set_demonstration_sampler", {"sampler": {"seed": 7, "k": k}}]], call="auto_run"))
    C.append(_cfg("custom_sampler_k4_bench_int", datasets=(FP, TEE), kwargs={"k": 4},
                  steps=[["set_demonstration_sampler", {"sampler": {"seed": 11, "k": 4}}]], fn="int"))
    C.append(_cfg("custom_sampler_k4_duplicates_noise", datasets=(FP,), kwargs={"k": 4},
                  steps=[["set_demonstration_sampler", {"sampler": {"seed": 5, "k": 4, "distinct": False,
                                                                    "demo_size": 6}}],
                         ["prompt_former.set_label_wrong_rate", 0.5]], call="auto_run"))
    C.append(_cfg("custom_sampler_then_reset", datasets=(FP, TEE), kwargs={"k": 4},
                  steps=[["set_demonstration_sampler", {"sampler": {"seed": 3, "k": 4}}],
                         ["reset_demonstration_sampler"]], call="auto_run"))
    # 6. preentered predictions
    for kind in ("int", "probs", "logits", "dyadic"):
        C.append(_cfg(f"preentered_{kind}", datasets=(FP, TREC), kwargs={"k": 4}, call="auto_run", fn=None,
                      preentered={"kind": kind, "seed": 1}, return_outputs=True))
    C.append(_cfg("return_outputs_sha", datasets=(FP, TREC), kwargs={"k": 2}, call="auto_run",
                  return_outputs=True))
    C.append(_cfg("return_outputs_int_batched", datasets=(FP, TREC), kwargs={"k": 2}, call="auto_run", fn="int",
                  batched=True, return_outputs=True))
    # 7. prompt-writer mutators and example()
    C.append(_cfg("replace_space_to_label", datasets=(RT, TREC), steps=[["prompt_former.replace_space_to_label"]]))
    C.append(_cfg("replace_space_to_label_int_k2", datasets=(FP, TREC), kwargs={"k": 2},
                  steps=[["prompt_former.replace_space_to_label"]], fn="int"))
    C.append(_cfg("mutators_instruction_prefix_space", datasets=(RT, TREC), steps=[
        ["prompt_former.change_instruction", "Classify the text.\n"],
        ["prompt_former.change_label_prefix", "Answer -> "],
        ["prompt_former.change_label_space", {"label_space_from": ["A", "B", "C", "D", "E", "F"]}]]))
    C.append(_cfg("mutators_all_k2_int", datasets=(FP, TREC), kwargs={"k": 2}, fn="int", steps=[
        ["prompt_former.change_instruction", "Task: label it.\n\n"],
        ["prompt_former.change_input_text_prefixes", ["Input: "]],
        ["prompt_former.change_label_prefix", "Label: "],
        ["prompt_former.change_label_affix", "\n\n"],
        ["prompt_former.change_query_prefix", "Now:\n"],
        ["prompt_former.change_label_space", {"label_space_from": ["x\u00e9", "y z", "", "w", "v", "u"]}]]))
    C.append(_cfg("set_config_dict_partial", datasets=(RT, TREC), steps=[
        ["prompt_former.set_config_dict", {"instruction": "Decide.\n", "label_prefix": "=> ", "label_affix": " |\n",
                                           "query_prefix": "Q ", "label_wrong_rate": 0.25}]]))
    C.append(_cfg("use_noisy_channel_mutator", datasets=(FP, TREC), kwargs={"k": 2}, fn="int",
                  steps=[["prompt_former.use_noisy_channel"]], call="auto_run"))
    C.append(_cfg("noisy_then_cancel", datasets=(FP,), kwargs={"k": 2, "noisy_channel": True},
                  steps=[["prompt_former.change_label_affix", "@@"], ["prompt_former.cancel_noisy_channel"]],
                  call="auto_run"))
    for k in (None, 2, 0):
        C.append(_cfg(f"example_{'default' if k is None else 'k%d' % k}", datasets=(RT, FP, TREC), call="examples",
                      fn=None, example_k=k, example_calls=3))
    C.append(_cfg("example_label_noise", datasets=(RT, FP), call="examples", fn=None, example_k=4, example_calls=3,
                  steps=[["prompt_former.set_label_wrong_rate", 0.5]]))
    C.append(_cfg("example_noisy", datasets=(RT, TREC), kwargs={"noisy_channel": True}, call="examples", fn=None,
                  example_k=2, example_calls=3))
    C.append(_cfg("example_contextual", bench="Contextual_bias", datasets=(RT,), call="examples", fn=None,
                  example_k=2, example_calls=3))
    C.append(_cfg("example_domain", bench="Domain_bias", datasets=(RT,), call="examples", fn=None,
                  example_k=2, example_calls=3))
    C.append(_cfg("prompt_set_k2", datasets=(FP, TREC), kwargs={"k": 2}, call="prompt_set", fn=None))
    C.append(_cfg("prompt_set_noisy_k1", datasets=(FP,), kwargs={"k": 1, "noisy_channel": True}, call="prompt_set",
                  fn=None))
    # 8. diagnosis sub-benchmarks
    C.append(_cfg("gler_k2_i3", bench="GLER", datasets=(FP, RT), kwargs={"k": 2, "interpolations": 3}))
    C.append(_cfg("gler_k2_i3_int", bench="GLER", datasets=(FP, TREC), kwargs={"k": 2, "interpolations": 3},
                  fn="int"))
    C.append(_cfg("gler_k3_i2_logits", bench="GLER", datasets=(FP,), kwargs={"k": 3, "interpolations": 2},
                  fn="logits"))
    for k in (2, 8):
        C.append(_cfg(f"template_sens_k{k}", bench="Template_sens", datasets=(RT, TREC), kwargs={"k": k}))
        C.append(_cfg(f"demo_sens_k{k}", bench="Demo_sens", datasets=(FP, TREC), kwargs={"k": k}))
    C.append(_cfg("template_sens_k4_int", bench="Template_sens", datasets=(FP, TEE), kwargs={"k": 4}, fn="int"))
    C.append(_cfg("demo_sens_k4_int_batched", bench="Demo_sens", datasets=(RT, TEE), kwargs={"k": 4}, fn="int",
                  batched=True))
    for k in (1, 8):
        C.append(_cfg(f"contextual_bias_k{k}", bench="Contextual_bias", datasets=(FP, TREC), kwargs={"k": k}))
        C.append(_cfg(f"domain_bias_k{k}", bench="Domain_bias", datasets=(FP, TREC), kwargs={"k": k}))
        C.append(_cfg(f"post_bias_k{k}", bench="Post_bias", datasets=(FP, TREC), kwargs={"k": k}))
    C.append(_cfg("domain_bias_len16", bench="Domain_bias", datasets=(RT, TREC),
                  kwargs={"k": 4, "domain_query_length": 16}))
    C.append(_cfg("domain_bias_len16_k2_logits", bench="Domain_bias", datasets=(FP, TEE),
                  kwargs={"k": 2, "domain_query_length": 16}, fn="logits"))
    C.append(_cfg("contextual_bias_noisy", bench="Contextual_bias", datasets=(FP, TREC),
                  kwargs={"k": 4, "noisy_channel": True}))
    C.append(_cfg("contextual_bias_noisy_k2_logits", bench="Contextual_bias", datasets=(RT,),
                  kwargs={"k": 2, "noisy_channel": True}, fn="logits"))
    C.append(_cfg("domain_bias_noisy_len16", bench="Domain_bias", datasets=(FP,),
                  kwargs={"k": 2, "noisy_channel": True, "domain_query_length": 16}))
    C.append(_cfg("post_bias_noisy_k2", bench="Post_bias", datasets=(FP, TREC), kwargs={"k": 2, "noisy_channel": True}))
    C.append(_cfg("contextual_bias_int", bench="Contextual_bias", datasets=(FP, TREC), kwargs={"k": 2}, fn="int"))
    # 9. set_k / reset
    C.append(_cfg("set_k8_after_construction", datasets=(FP, TREC), kwargs={"k": 4}, steps=[["set_k", 8]],
                  call="auto_run"))
    C.append(_cfg("fresh_k8_auto_run", datasets=(FP, TREC), kwargs={"k": 8}, call="auto_run"))
    C.append(_cfg("set_k8_bench", datasets=(FP, TREC), kwargs={"k": 4}, steps=[["set_k", 8]]))
    C.append(_cfg("set_k2_after_indomain", datasets=(FP, TREC), kwargs={"k": 4},
                  steps=[["set_in_domain_mode"], ["set_k", 2]], call="auto_run"))
    C.append(_cfg("reset_sampler_fresh", datasets=(FP, TREC), kwargs={"k": 4}, steps=[["reset_demonstration_sampler"]],
                  call="auto_run"))
    C.append(_cfg("set_k0_then_reset", datasets=(FP,), kwargs={"k": 4},
                  steps=[["set_k", 0], ["reset_demonstration_sampler"]], call="auto_run"))
    C.append(_cfg("demo_sens_set_k2", bench="Demo_sens", datasets=(FP,), kwargs={"k": 4}, steps=[["set_k", 2]]))
    C.append(_cfg("template_sens_set_k2", bench="Template_sens", datasets=(RT,), kwargs={"k": 4},
                  steps=[["set_k", 2]]))
    # 10. further probes: other datasets, chains of mutators, first prompt_set() of diagnosis experimentors
    C.append(_cfg("normal_k2_int_other_datasets", datasets=("GLUE-SST2", "AGNews", "Subjective", "tweet_eval_hate"),
                  kwargs={"k": 2}, fn="int"))
    C.append(_cfg("domain_bias_len16_hate_subj", bench="Domain_bias", datasets=("tweet_eval_hate", "Subjective"),
                  kwargs={"k": 2, "domain_query_length": 16}))
    C.append(_cfg("domain_bias_k4_int", bench="Domain_bias", datasets=(TEE,), kwargs={"k": 4}, fn="int"))
    C.append(_cfg("gler_k4_i7", bench="GLER", datasets=(FP,), kwargs={"k": 4, "interpolations": 7}))
    C.append(_cfg("gler_k2_i10", bench="GLER", datasets=(FP,), kwargs={"k": 2, "interpolations": 10}, fn="int"))
    C.append(_cfg("gler_k1_i5_dyadic", bench="GLER", datasets=(TREC,), kwargs={"k": 1}, fn="dyadic"))
    C.append(_cfg("demo_sens_reset", bench="Demo_sens", datasets=(TREC,), kwargs={"k": 4},
                  steps=[["reset_demonstration_sampler"]]))
    C.append(_cfg("contextual_bias_label_noise", bench="Contextual_bias", datasets=(FP, TREC), kwargs={"k": 4},
                  steps=[["prompt_former.set_label_wrong_rate", 0.5]]))
    C.append(_cfg("post_bias_dyadic_k4", bench="Post_bias", datasets=(RT, TEE), kwargs={"k": 4}, fn="dyadic"))
    C.append(_cfg("mutators_duplicate_label_space", datasets=(TREC,), kwargs={"k": 4}, steps=[
        ["prompt_former.change_label_space", {"label_space_from": ["same", "same", "other", "same", "x", "x"]}]]))
    C.append(_cfg("set_config_dict_noisy_false", datasets=(RT,), steps=[
        ["prompt_former.set_config_dict", {"instruction": "Gone.\n", "label_prefix": "=> ",
                                           "use_noisy_channel": False}]]))
    C.append(_cfg("set_config_dict_noisy_true", datasets=(RT, TREC), fn="int", steps=[
        ["prompt_former.set_config_dict", {"instruction": "Kept.\n", "label_prefix": "=> ",
                                           "use_noisy_channel": True}]]))
    C.append(_cfg("noisy_then_replace_space_to_label", datasets=(FP, TREC), kwargs={"k": 2, "noisy_channel": True},
                  fn="int", steps=[["prompt_former.replace_space_to_label"]]))
    C.append(_cfg("label_noise_then_replace_space", datasets=(FP,), kwargs={"k": 4},
                  steps=[["prompt_former.set_label_wrong_rate", 0.5], ["prompt_former.replace_space_to_label"],
                         ["prompt_former.change_instruction", "I\n"]]))
    C.append(_cfg("in_domain_label_noise_trec", datasets=(TREC,), kwargs={"k": 3}, call="auto_run",
                  steps=[["set_in_domain_mode"], ["prompt_former.set_label_wrong_rate", 1 / 3]]))
    C.append(_cfg("prompt_set_label_noise", datasets=(FP, RT), kwargs={"k": 4}, call="prompt_set", fn=None,
                  steps=[["prompt_former.set_label_wrong_rate", 0.5]]))
    C.append(_cfg("prompt_set_domain_bias", bench="Domain_bias", datasets=(RT,), kwargs={"k": 1}, call="prompt_set",
                  fn=None))
    C.append(_cfg("prompt_set_contextual_bias", bench="Contextual_bias", datasets=(TREC,), kwargs={"k": 2},
                  call="prompt_set", fn=None))
    C.append(_cfg("prompt_set_gler", bench="GLER", datasets=(FP,), kwargs={"k": 2, "interpolations": 3},
                  call="prompt_set", fn=None))
    C.append(_cfg("prompt_set_template_sens", bench="Template_sens", datasets=(RT,), kwargs={"k": 2},
                  call="prompt_set", fn=None))
    C.append(_cfg("prompt_set_demo_sens", bench="Demo_sens", datasets=(FP,), kwargs={"k": 2}, call="prompt_set",
                  fn=None))
    C.append(_cfg("auto_run_gler_exp", bench="GLER", datasets=(FP,), kwargs={"k": 2, "interpolations": 3},
                  call="auto_run", return_outputs=True))
    C.append(_cfg("auto_run_demo_sens_exp", bench="Demo_sens", datasets=(TREC,), kwargs={"k": 2}, call="auto_run"))
    ids = [c["id"] for c in C]
    assert len(ids) == len(set(ids)), "duplicate configuration ids"
    return C


CONFIGS = build_configs()
CONFIGS_BY_ID = {c["id"]: c for c in CONFIGS}


# ---------------------------------------------------------------------------------------------------------------
# The driver, shared by the recorder (original) and tests/subbenchmarks/test_golden.py (ours)
# ---------------------------------------------------------------------------------------------------------------
def to_plain(x):
    """JSON-ready copy: tuples become lists, dict subclasses plain dicts (key order kept)."""
    if isinstance(x, dict):
        return {str(k): to_plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_plain(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, (int, float, str)):
        return x
    if hasattr(x, "item"):  # a NumPy scalar, should one ever appear
        return x.item()
    raise TypeError(f"unexpected result value {x!r}")


def json_sha(x):
    return hashlib.sha256(json.dumps(to_plain(x)).encode()).hexdigest()


def _resolve(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _apply_steps(exp, steps, dataset_name, label_space):
    for step in steps:
        name, args = step[0], list(step[1:])
        if name == "set_demonstration_sampler":
            s = args[0]["sampler"]
            demo = s.get("demo_size", DEMO_SIZE[dataset_name])
            args = [make_sampler(s["seed"], TEST_SIZE, s["k"], demo, s.get("distinct", True))]
        elif name == "prompt_former.change_label_space":
            args = [args[0]["label_space_from"][:len(label_space)]]
        _resolve(exp, name)(*args)


def run_config(cfg, make_bench, dump=None):
    """Run one configuration; ``make_bench(bench_name, dataset_names, kwargs)`` builds a benchmark."""
    bench = make_bench(cfg["bench"], cfg["datasets"], cfg["kwargs"])
    names = cfg["datasets"]
    exps = [bench[i] for i in range(len(names))]
    label_spaces = [list(e.prompt_former.get_label_space()) for e in exps]
    for e, name, ls in zip(exps, names, label_spaces):
        _apply_steps(e, cfg["steps"], name, ls)
    out = {"datasets": {}}
    call = cfg["call"]

    def recorder():
        r = Recorder(cfg["fn"], cfg["batched"])
        if dump is not None:
            r.prompts = []
        return r

    if call == "bench":
        recs = [recorder() for _ in names]
        res = bench(recs, batched_inference=cfg["batched"])
        out["result"] = to_plain(res)
        for name, r in zip(names, recs):
            out["datasets"][name] = {"prompts": r.summary()}
            if dump is not None:
                dump[name] = r.prompts
    elif call == "auto_run":
        for e, name, ls in zip(exps, names, label_spaces):
            entry = {}
            kw = {"batched_inference": cfg["batched"]}
            if cfg.get("return_outputs"):
                kw["return_outputs"] = True
            r = None
            if cfg.get("preentered"):
                p = cfg["preentered"]
                kw["preentered_prediction"] = make_preentered(p["kind"], p["seed"], len(e), len(ls))
            else:
                r = recorder()
                kw["forward_inference"] = r
            ret = e.auto_run(**kw)
            entry["return_length"] = len(ret)
            entry["result"] = to_plain(ret[0])
            entry["success"] = ret[1]
            if cfg.get("return_outputs") and len(ret) > 2:  # GLER/Template/Demo experimentors return 2
                o = to_plain(ret[2])
                entry["outputs_keys"] = list(o)
                entry["groundtruth"] = o.get("groundtruth")
                entry["predicted"] = o.get("predicted")
                entry["prob_sha256"] = json_sha(o.get("prob."))
                entry["prob_head"] = (o.get("prob.") or [])[:3]
            if r is not None:
                entry["prompts"] = r.summary()
                if dump is not None:
                    dump[name] = r.prompts
            out["datasets"][name] = entry
    elif call == "examples":
        for e, name in zip(exps, names):
            k = cfg.get("example_k")
            strings = [(e.prompt_former.example() if k is None else e.prompt_former.example(k))
                       for _ in range(cfg["example_calls"])]
            out["datasets"][name] = {"prompts": strings_summary(strings),
                                     "types": [type(s).__name__ for s in strings]}
            if dump is not None:
                dump[name] = [prompt_text(s) for s in strings]
    elif call == "prompt_set":
        for e, name in zip(exps, names):
            strings = e.prompt_set()
            out["datasets"][name] = {"prompts": strings_summary(strings)}
            if dump is not None:
                dump[name] = [prompt_text(s) for s in strings]
    else:
        raise ValueError(call)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Worker (runs under the original's interpreter) and recorder
# ---------------------------------------------------------------------------------------------------------------
def _original_make_bench(bench_name, dataset_names, kwargs):
    import StaICC
    from StaICC.util import hgf_dataset_loader
    loaders = [getattr(hgf_dataset_loader, LOADERS[n]) for n in dataset_names]
    return getattr(StaICC, bench_name)(datasets=loaders, **kwargs)


def worker(config_id, out_path, dump_dir):
    import warnings
    warnings.simplefilter("ignore")
    sys.path = [p for p in sys.path if os.path.abspath(p or os.getcwd()) not in (REPO, HERE)]
    import StaICC
    where = os.path.abspath(StaICC.__file__)
    if where.startswith(REPO + os.sep):
        raise SystemExit(f"refusing to record: StaICC imported from this repository ({where})")
    cfg = CONFIGS_BY_ID[config_id]
    dump = {} if dump_dir else None
    started = time.time()
    try:
        out = run_config(cfg, _original_make_bench, dump)
        out["error"] = None
    except Exception as exc:  # recorded: the original may crash on some configurations
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["seconds"] = round(time.time() - started, 2)
    with open(out_path, "w") as fh:
        json.dump(out, fh)
    if dump_dir and dump:
        with open(os.path.join(dump_dir, config_id + ".json"), "w") as fh:
            json.dump(dump, fh)


def record_one(python, cfg, dump_dir):
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "out.json")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        cmd = [python, "-W", "ignore", os.path.abspath(__file__), "--worker", cfg["id"], "--out", out_path]
        if dump_dir:
            cmd += ["--dump-prompts", dump_dir]
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or not os.path.exists(out_path):
            raise RuntimeError(f"{cfg['id']}: worker failed\n{proc.stderr[-3000:]}")
        with open(out_path) as fh:
            out = json.load(fh)
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('StaICC'))"],
                             cwd="/", env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                             capture_output=True, text=True).stdout.strip()
    seconds = out.pop("seconds", None)
    golden = {"config": cfg, "recorded_with": {"staicc": version}, "original": out}
    path = os.path.join(GOLDEN_DIR, cfg["id"] + ".json")
    with open(path, "w") as fh:
        json.dump(golden, fh, indent=1, ensure_ascii=True)
        fh.write("\n")
    return cfg["id"], seconds, out.get("error")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default="/tmp/origvenv/bin/python",
                    help="interpreter with the original StaICC 0.1.1 installed (and not ours)")
    ap.add_argument("--only", nargs="*", help="configuration ids to record (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dump-prompts", help="also write the original's prompts, per configuration, to this folder")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.out, args.dump_prompts)
    if args.list:
        for c in CONFIGS:
            print(c["id"])
        return
    configs = [CONFIGS_BY_ID[i] for i in args.only] if args.only else CONFIGS
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    if args.dump_prompts:
        os.makedirs(args.dump_prompts, exist_ok=True)
    if not args.only:  # a full run replaces the folder's content
        for f in os.listdir(GOLDEN_DIR):
            if f.endswith(".json") and f[:-5] not in CONFIGS_BY_ID:
                os.remove(os.path.join(GOLDEN_DIR, f))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for cid, seconds, error in pool.map(lambda c: record_one(args.python, c, args.dump_prompts), configs):
            print(f"{cid:45s} {seconds}s" + (f"  ORIGINAL RAISED {error}" if error else ""), flush=True)


if __name__ == "__main__":
    main()
