"""Random-weight Hugging Face checkpoints of named Qwen2 shapes (for `ragen bench gpu` and tests): config.json in
Hugging Face's Qwen2 layout plus safetensors written by our own writer, so transformers and the worker both load it.
"""
import json
import os

import torch

from .model import Decoder, ModelConfig
from .safetensors_io import save_weights

_QWEN2 = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu", "rms_norm_eps": 1e-6,
          "rope_theta": 1000000.0, "max_position_embeddings": 32768, "attention_dropout": 0.0, "use_sliding_window": False,
          "bos_token_id": 151643, "eos_token_id": 151645}

# The published Qwen2.5 configurations (vocabulary, widths, depths, heads), and a tiny one for CPU tests.
SHAPES = {
    "tiny": dict(_QWEN2, vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2),
    "qwen2.5-0.5b": dict(_QWEN2, vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True),
    "qwen2.5-1.5b": dict(_QWEN2, vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, num_key_value_heads=2, tie_word_embeddings=True),
}


def write_random_checkpoint(directory, shape, seed=0, dtype=torch.bfloat16):
    """Write `shape` (a SHAPES key) with weights N(0, 0.02), norms 1, biases 0; returns the directory."""
    if shape not in SHAPES:
        raise ValueError(f"unknown model shape `{shape}`; known: {', '.join(SHAPES)}")
    raw = dict(SHAPES[shape], torch_dtype={torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype])
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(raw, f, indent=2)
    with open(os.path.join(directory, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": raw["bos_token_id"], "eos_token_id": raw["eos_token_id"]}, f, indent=2)
    with torch.device("meta") if hasattr(torch.device, "__enter__") else _cpu():  # torch >= 2: shapes only
        names = {k: tuple(v.shape) for k, v in Decoder(ModelConfig(raw)).state_dict().items()}
    gen = torch.Generator().manual_seed(seed)
    weights = {}
    for name, shape_ in names.items():
        if name.endswith("norm.weight"):
            t = torch.ones(shape_)
        elif name.endswith(".bias"):
            t = torch.zeros(shape_)
        else:
            t = torch.randn(shape_, generator=gen) * 0.02
        weights[name] = t.to(dtype)
    save_weights(directory, weights)
    return directory


class _cpu:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False
