"""Random-weight Llama models of real shapes, for timing where no weights can be downloaded.

Throughput depends on the shape, not on the values: a seed-0 random model of
Llama-3.2-1B's or Llama-3.1-8B's shape costs what the real one costs per token.
"""
from typing import Any, Dict

PRESETS = {  # name -> LlamaConfig arguments (random weights)
    "llama-3.2-1b": {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
                         "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True},
    "llama-3.1-8b": {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                         "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False},
}


def random_llama(shape: Dict[str, Any], device: str, dtype: Any) -> Any:
    """A LlamaForCausalLM of this shape with seed-0 random weights, built on ``device``."""
    import torch
    import transformers
    from StaICC.backends.tiny_models import BOS_ID, EOS_ID, PAD_ID
    torch.manual_seed(0)
    config = transformers.LlamaConfig(max_position_embeddings=8192, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                                      pad_token_id=PAD_ID, attn_implementation="sdpa", **shape)
    with torch.device(device):
        return transformers.LlamaForCausalLM(config).to(dtype)
