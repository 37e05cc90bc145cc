"""A real Llama whose greedy output is forced by its weights: a thinking section, then an answer.

``thinking_pair()`` builds a ``LlamaForCausalLM`` (the HF class, run by ``generate``) and a
byte-level BPE tokenizer with ``<think>``, ``</think>`` and two label words as added tokens.
Its weights make it a bigram model: attention and MLP write nothing (``o_proj`` and
``down_proj`` are zero), so the last hidden state is the normalised embedding of the last
token, and the output head maps each token of the forced text to its successor and every
other token to ``<think>``.  The model writes::

    <think>negative</think>positive</s>

(unless the prompt ends with one of these tokens), so a parser that read the thinking
section would answer "negative", one that reads the answer "positive"; with fewer than 3
new tokens the section never ends.
"""
import functools
from typing import Any, List, Tuple

from backend_helpers import CORPUS

START, END = "<think>", "</think>"
THOUGHT, ANSWER = "negative", "positive"
#: tokens of the thinking section, end marker included: <think>, negative, </think>
SECTION_TOKENS = 3


def forced_ids(tokenizer: Any) -> List[int]:
    """The token ids the model generates, end of sequence included."""
    return tokenizer.convert_tokens_to_ids([START, THOUGHT, END, ANSWER]) + [tokenizer.eos_token_id]


@functools.lru_cache(maxsize=None)
def thinking_pair() -> Tuple[Any, Any]:
    """(model, tokenizer): the forced-output Llama and its tokenizer (see the module docstring)."""
    import torch
    import transformers

    from StaICC.prefabricate_inference.tiny_models import tiny_tokenizer
    tokenizer = tiny_tokenizer(CORPUS, bos=True, vocab_size=512)
    tokenizer.add_tokens([START, END, THOUGHT, ANSWER])
    hidden = 64
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden,
                                      num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
                                      max_position_embeddings=4096, tie_word_embeddings=False,
                                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.pad_token_id)
    model = transformers.LlamaForCausalLM(config)
    sequence = forced_ids(tokenizer)
    other = hidden - 1  # the embedding direction of every token outside the forced text
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
        embedding = model.get_input_embeddings().weight
        head = model.get_output_embeddings().weight
        embedding[:, other] = 1.0
        for position, token in enumerate(sequence[:-1]):
            embedding[token].zero_()
            embedding[token, position] = 1.0
            head[sequence[position + 1], position] = 10.0
        head[sequence[0], other] = 10.0
    return model.eval(), tokenizer


def save_thinking_model(directory: str) -> str:
    model, tokenizer = thinking_pair()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
