"""Tiny random causal LMs and locally trained tokenizers, for offline tests and benchmarks.

Nothing is downloaded: the tokenizer is a byte-level BPE trained on the texts
you pass (for example a dataset's demonstration texts) and the model is
randomly initialised from a small config.  The predictions are meaningless;
the shapes, tokenization quirks (BOS, merges at the prompt/label join) and
code paths are those of real HuggingFace models.
"""
from typing import Any, Iterable, Optional

from ..errors import InvalidValueError
from ..extras import require

__all__ = ["tiny_tokenizer", "tiny_causal_lm", "SPECIAL_TOKENS", "PAD_ID", "BOS_ID", "EOS_ID", "TINY_CHAT_TEMPLATE"]

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>"]
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
#: a chat template in the shape of instruction-tuned models' (a role marker, the content, an end of turn), so
#: that ``chat=true``, ``system=...``, ``fewshot_as_multiturn=true`` and generate mode run on a tiny model
TINY_CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n"
                      "{{ message['content'] }}{{ eos_token }}\n{% endfor %}"
                      "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def tiny_tokenizer(texts: Iterable[str], bos: bool = True, vocab_size: int = 4096,
                   chat_template: Optional[str] = None) -> Any:
    """A GPT-2 style byte-level BPE wrapped in ``PreTrainedTokenizerFast``.

    With ``bos`` every text starts with "<s>" (like Llama tokenizers); without,
    nothing is added (like GPT-2).  ``chat_template`` (e.g. :data:`TINY_CHAT_TEMPLATE`)
    is saved with the tokenizer, as an instruction-tuned model's is.
    """
    require("transformers", "tiny_tokenizer")
    require("tokenizers", "tiny_tokenizer")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer=trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS_ID)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                        model_input_names=["input_ids", "attention_mask"])  # no token_type_ids
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return tokenizer


def tiny_causal_lm(family: str = "llama", vocab_size: int = 4096, hidden_size: int = 64, layers: int = 2,
                   seed: int = 0, sharpen: float = 8.0) -> Any:
    """A randomly initialised float32 causal LM ("llama" or "gpt2") in eval mode.

    ``sharpen`` scales the output head so that the random model's label
    distributions are far from uniform and argmax comparisons are meaningful.
    """
    torch = require("torch", "tiny_causal_lm")
    transformers = require("transformers", "tiny_causal_lm")
    torch.manual_seed(seed)
    if family == "llama":
        config = transformers.LlamaConfig(
            vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
            num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
            bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID)
        model = transformers.LlamaForCausalLM(config)
    elif family == "gpt2":
        config = transformers.GPT2Config(
            vocab_size=vocab_size, n_embd=hidden_size, n_layer=layers, n_head=4, n_positions=4096,
            bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID)
        model = transformers.GPT2LMHeadModel(config)
    else:
        raise InvalidValueError(f"tiny_causal_lm: family must be 'llama' or 'gpt2', got {family!r}")
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(sharpen)
    return model.eval()
