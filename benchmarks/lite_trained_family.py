"""A family of tiny causal LMs trained here, on CPU, for the lite proxy study on models that share item difficulty.

Random-weight models and the study's function models share no item difficulty with one another, so
a proxy run of one cannot narrow another's interval much.  Real models of one family do: they find
the same items hard.  Nothing can be downloaded here, so this script *trains* a toy family: Llama
shapes of a few hundred thousand parameters, one byte-level BPE
(:func:`StaICC.backends.tiny_models.tiny_tokenizer`, trained on the demonstration texts) shared by
every member, each trained from its own seed on the same text: the **demonstration sets** of the
datasets (never their test items), written as the standard's ICL prompts (1 to 4 demonstrations and a
query of the demonstration set, then the query's label word), with the causal-LM loss on the label
words only (every demonstration's and the query's): the quantity a run scores.  (A first recipe, the
loss on every token with the label words weighted 5, left both members at chance in the time there was:
they learnt the text and a label prior, not the labels.)  Every draw is seeded, one CPU thread: the same command rebuilds the
same weights on the same machine.

The **distilled** member is the sibling's shape trained the way real small members of a family often are
(Gemma 2's 2B and 9B, Llama 3.2's 1B and 3B learnt from a larger member's output distributions): on the same
demonstration-set prompts, its loss is the KL divergence from the **target's** distribution over the label words
to its own at every label position (each model's logits of the label words' tokens, softmaxed: what a run
scores), the target's computed here from its saved weights; no true label enters it.  The target must be saved
under ``--out`` first, with the tokenizer this script builds (checked).  The **distilled-broad** member is distilled
the same way on broader prompts (``lite_family_prompts``): the kinds the suite's sub-benchmarks write (label noise,
pseudo-queries, Template_sens's templates), all from the demonstration sets, chosen knowing the suite.

    python benchmarks/lite_trained_family.py --out /tmp/41e               # tokenizer + every member
    python benchmarks/lite_trained_family.py --out /tmp/41e --members small
    python benchmarks/lite_trained_family.py --out /tmp/41e --members distilled   # after the target
    python benchmarks/lite_trained_family.py --out /tmp/41e --members distilled-broad

Then full runs (records kept) of each member, e.g.
``staicc run --model hf --model-args pretrained=/tmp/41e/target,dtype=float32,threads=1,scoring=sequence
--benchmarks all --datasets rotten_tomatoes TREC --log-samples --output-dir /tmp/41e/runs/target``, and the
side-by-side study of ``benchmarks/lite_proxy_trained.py``.  ``scoring=sequence`` (a departure from the
standard, marked so in the runs) scores each label as a continuation of the prompt, as these models were
trained; the standard's ``last_token`` rule scores the label tokenized alone at the prompt's last position,
a join they never saw (under it the sibling stayed at chance: accuracy 0.514 and 0.252).
"""
import argparse
import os
import random
import re
import sys
import time
from typing import Any, Dict, List, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: the datasets of the HF model in the coverage study
DATASETS = ("rotten_tomatoes", "TREC")
#: name -> (hidden size, layers, seed, optimisation steps): the target, a smaller sibling trained on the true
#: labels, and two members of the sibling's shape distilled from the target (on the standard prompts, on broad ones)
MEMBERS: Dict[str, Tuple[int, int, int, int]] = {
    "target": (96, 3, 1, 400),
    "small": (64, 2, 2, 400),
    "distilled": (64, 2, 3, 1000),
    "distilled-broad": (64, 2, 4, 1000),
}
#: a distilled member -> its teacher (a member saved under ``--out`` before it); the others learn the true labels
TEACHERS: Dict[str, str] = {"distilled": "target", "distilled-broad": "target"}
#: the members trained on the broader prompt kinds of ``lite_family_prompts`` (the others: the standard template,
#: a demonstration-set query)
BROAD = frozenset({"distilled-broad"})
VOCAB = 2048
BATCH = 16
MAX_TOKENS = 384
#: the broad prompts hold a domain pseudo-query of 128 words: truncation must not cut the query's label position
BROAD_MAX_TOKENS = 1024
LEARNING_RATE = 2e-3
#: the loss weight of a label word's tokens (a demonstration's or the query's); other text's is 0
LABEL_WEIGHT = 1.0


def writers() -> List[Tuple[Any, Any]]:
    """(prompt writer, demonstration part) of each dataset, as the Normal sub-benchmark builds them."""
    from StaICC import Normal
    found = []
    for experimentor in Normal():
        if experimentor.dataset_name in DATASETS:
            found.append((experimentor.prompt_former, experimentor.triplet_dataset.demonstration))
    return found


def training_text(writer: Any, part: Any, rng: random.Random) -> str:
    """One standard ICL prompt of k demonstrations (k drawn from 1 to 4, the standard's) and a query, all drawn
    from the demonstration set, with the query's label word after it."""
    k = rng.randint(1, 4)
    picks = rng.sample(range(len(part)), k + 1)
    lines = [(part.get_input_text(j), part.get_label(j)) for j in picks[:k]]
    query = picks[k]
    words = writer.get_label_space()
    return writer.write_prompt_from_dataline(lines, part.get_input_text(query)) + words[part.label_index(query)]


def label_spans(text: str, prefix: str, words: List[str]) -> List[Tuple[int, int]]:
    """The character spans of the label words (each after the template's label prefix) in a training text."""
    pattern = re.escape(prefix) + "(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"
    return [m.span(1) for m in re.finditer(pattern, text)]


def batch(tokenizer: Any, texts: List[Tuple[str, List[Tuple[int, int]]]], max_tokens: int = MAX_TOKENS
          ) -> Tuple[Any, Any, Any]:
    """(input ids, attention mask, per-token loss weights: the label words' tokens only) of a padded batch."""
    import torch
    encoded = tokenizer([t for t, _ in texts], return_offsets_mapping=True, padding=True, truncation=True,
                        max_length=max_tokens, return_tensors="pt")
    weights = torch.zeros(encoded["input_ids"].shape, dtype=torch.float32)
    for row, (_, spans) in enumerate(texts):
        for col, (start, end) in enumerate(encoded["offset_mapping"][row].tolist()):
            if end > start and any(start < b and end > a for a, b in spans):
                weights[row, col] = LABEL_WEIGHT
    return encoded["input_ids"], encoded["attention_mask"], weights


def label_token_ids(tokenizer: Any, writer: Any) -> List[int]:
    """The token id of each label word as it follows the template's label prefix: one token each (the family's
    BPE was trained on these prompts), so a label's score under ``scoring=sequence`` is that token's logit."""
    return prefix_label_ids(tokenizer, writer.get_config_dict()["label_prefix"], writer.get_label_space())


def prefix_label_ids(tokenizer: Any, prefix: str, words: Sequence[str]) -> List[int]:
    """:func:`label_token_ids` of a label prefix and label words (the broad prompts' other templates have theirs)."""
    ids = []
    for word in words:
        encoded = tokenizer(prefix + word, return_offsets_mapping=True)
        covering = [t for t, (a, b) in zip(encoded["input_ids"], encoded["offset_mapping"])
                    if b > a and a < len(prefix) + len(word) and b > len(prefix)]
        if len(covering) != 1:
            raise SystemExit(f"label word {word!r} is {len(covering)} tokens after {prefix!r}; distillation "
                             "here needs one token per label word")
        ids.append(covering[0])
    return ids


def distillation_loss(student: Any, teacher: Any, weights: Any, label_ids: List[List[int]]) -> Any:
    """The mean over every label position (each demonstration's and the query's) of KL(teacher || student)
    between their distributions over the prompt's label words (each model's logits of the label tokens,
    softmaxed): what a run scores.  ``student``/``teacher``: logits at the positions that predict the next token;
    ``weights``: non-zero on the label words' tokens, aligned with those predictions."""
    import torch
    total, count = student.new_zeros(()), 0
    for row, ids in enumerate(label_ids):
        positions = torch.nonzero(weights[row] > 0).flatten()
        index = torch.tensor(ids)
        wanted = torch.log_softmax(teacher[row, positions][:, index], dim=-1)
        given = torch.log_softmax(student[row, positions][:, index], dim=-1)
        total = total + (wanted.exp() * (wanted - given)).sum()
        count += len(positions)
    return total / max(count, 1)


def drawn_batch(rng: random.Random, sources: List[Tuple[Any, Any, List[int]]]
                ) -> List[Tuple[str, List[Tuple[int, int]], List[int]]]:
    """BATCH training prompts of randomly drawn datasets: (text, the label words' spans, the label token ids)."""
    texts = []
    for _ in range(BATCH):
        writer, part, ids = sources[rng.randrange(len(sources))]
        text = training_text(writer, part, rng)
        texts.append((text, label_spans(text, writer.get_config_dict()["label_prefix"], writer.get_label_space()),
                      ids))
    return texts


def broad_batch(rng: random.Random, sources: List[Any]) -> List[Tuple[str, List[Tuple[int, int]], List[int]]]:
    """BATCH broad prompts (``lite_family_prompts``) of randomly drawn datasets, as :func:`drawn_batch` gives."""
    from lite_family_prompts import broad_text
    texts = []
    for _ in range(BATCH):
        text, template, ids = broad_text(sources[rng.randrange(len(sources))], rng)
        texts.append((text, label_spans(text, template.label_prefix, list(template.label_space)), list(ids)))
    return texts


def step_loss(model: Any, teacher: Any, tokenizer: Any, texts: List[Tuple[str, Any, List[int]]],
              max_tokens: int = MAX_TOKENS) -> Any:
    """One batch's loss: the cross-entropy of the true label words, or with a teacher the distillation loss."""
    import torch
    ids, mask, weights = batch(tokenizer, [(t, spans) for t, spans, _ in texts], max_tokens)
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
    if teacher is not None:
        with torch.no_grad():
            wanted = teacher(input_ids=ids, attention_mask=mask).logits[:, :-1]
        return distillation_loss(logits, wanted, weights[:, 1:], [i for _, _, i in texts])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                                             reduction="none")
    w = weights[:, 1:].reshape(-1)
    return (loss * w).sum() / w.sum()


def load_teacher(name: str, out: str, tokenizer: Any) -> Any:
    """The saved member a distilled one learns from, in eval mode; refused unless it shares the tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder = os.path.join(out, TEACHERS[name])
    if not os.path.isdir(folder):
        raise SystemExit(f"{name} is distilled from {TEACHERS[name]}: train it first (no folder {folder})")
    if AutoTokenizer.from_pretrained(folder).get_vocab() != tokenizer.get_vocab():
        raise SystemExit(f"{folder}'s tokenizer is not the one built here: train the family again")
    return AutoModelForCausalLM.from_pretrained(folder, dtype="float32").eval()


def train(name: str, out: str, tokenizer: Any, sources: List[Tuple[Any, Any]]) -> Dict[str, float]:
    """Train one member from its seed and save it (weights and the shared tokenizer) under ``out/name``."""
    import torch

    from StaICC.backends.tiny_models import tiny_causal_lm
    hidden, layers, seed, steps = MEMBERS[name]
    teacher = load_teacher(name, out, tokenizer) if name in TEACHERS else None
    if name in BROAD:
        from lite_family_prompts import broad_sources
        labelled, draw, max_tokens = broad_sources(tokenizer, sources, prefix_label_ids), broad_batch, BROAD_MAX_TOKENS
    else:
        labelled = [(w, p, label_token_ids(tokenizer, w) if teacher is not None else []) for w, p in sources]
        draw, max_tokens = drawn_batch, MAX_TOKENS
    torch.manual_seed(seed)
    model = tiny_causal_lm("llama", vocab_size=len(tokenizer), hidden_size=hidden, layers=layers, seed=seed,
                           sharpen=1.0).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, LEARNING_RATE, total_steps=steps, pct_start=0.1)
    rng = random.Random(f"family {name} {seed}")
    started, losses = time.perf_counter(), []
    for step in range(steps):
        loss = step_loss(model, teacher, tokenizer, draw(rng, labelled), max_tokens)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 100 == 0 or step == steps - 1:
            print(f"{name}: step {step} loss {sum(losses[-50:]) / len(losses[-50:]):.3f} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    target = os.path.join(out, name)
    model.eval().save_pretrained(target)
    tokenizer.save_pretrained(target)
    parameters = sum(p.numel() for p in model.parameters())
    return {"parameters": parameters, "seconds": time.perf_counter() - started, "loss": sum(losses[-50:]) / 50}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/41e", help="where the members are saved (one folder each)")
    parser.add_argument("--members", default=",".join(MEMBERS), help=f"comma-separated, of {', '.join(MEMBERS)}")
    args = parser.parse_args()
    import torch

    from StaICC.backends.tiny_models import tiny_tokenizer
    torch.set_num_threads(1)
    sources = writers()
    texts = [training_text(w, p, random.Random(f"tokenizer {i}")) for w, p in sources for i in range(2000)]
    tokenizer = tiny_tokenizer(texts, bos=True, vocab_size=VOCAB)
    for name in [m for m in args.members.split(",") if m]:
        found = train(name, args.out, tokenizer, sources)
        print(f"{name}: {MEMBERS[name]} (hidden, layers, seed, steps), {found['parameters']} parameters, "
              f"{found['seconds']:.0f} s, final loss {found['loss']:.3f}", flush=True)


if __name__ == "__main__":
    main()
