#!/usr/bin/env python3
"""Interop with Hugging Face transformers (+ peft), run by hand where transformers is installed.

  hf_check.py logits CHECKPOINT_DIR IDS_JSON OUT_JSON
      Load a checkpoint saved by ragen-ts with AutoModelForCausalLM (and its PEFT adapter from
      CHECKPOINT_DIR/adapter when present) and write the logits of the ids ([[...], ...]) as JSON.
  hf_check.py fixtures OUT_DIR
      Write the test fixtures src/model/fixtures/: tiny Qwen2 (float32, one file) and Qwen3 (bfloat16,
      sharded) checkpoints saved by transformers' save_pretrained, with the logits transformers computes.
"""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM, Qwen2Config, Qwen3Config

IDS = [[3, 17, 5, 30, 2, 9, 11, 40], [8, 1, 36, 4, 22, 60, 7, 7]]


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor(ids)).logits.float()


def cmd_logits(ckpt, ids_path, out_path):
    model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32)
    if os.path.exists(os.path.join(ckpt, "adapter", "adapter_config.json")):
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, os.path.join(ckpt, "adapter"))
    model.eval()
    out = logits_of(model, json.load(open(ids_path)))
    json.dump({"shape": list(out.shape), "data": out.flatten().tolist()}, open(out_path, "w"))


def perturbed(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            base = torch.ones_like(p) if name.endswith("norm.weight") else torch.zeros_like(p)
            p.copy_(base + 0.2 * torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype))
    return model.eval()


def cmd_fixtures(out_dir):
    common = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, rope_theta=10000.0, rms_norm_eps=1e-6)
    q2 = perturbed(AutoModelForCausalLM.from_config(Qwen2Config(**common, tie_word_embeddings=True)), 1)
    q2.save_pretrained(os.path.join(out_dir, "hf-qwen2"))
    q3 = perturbed(AutoModelForCausalLM.from_config(Qwen3Config(**common, head_dim=16, tie_word_embeddings=False)), 2)
    q3 = q3.to(torch.bfloat16)
    q3.save_pretrained(os.path.join(out_dir, "hf-qwen3-bf16-sharded"), max_shard_size="40KB")
    for name in ["hf-qwen2", "hf-qwen3-bf16-sharded"]:
        # reload as transformers users do: float32 compute (bf16 weights upcast), fresh rotary buffers
        model = AutoModelForCausalLM.from_pretrained(os.path.join(out_dir, name), dtype=torch.float32).eval()
        out = logits_of(model, IDS)
        json.dump({"ids": IDS, "shape": list(out.shape), "logits": [round(x, 6) for x in out.flatten().tolist()]},
                  open(os.path.join(out_dir, name, "expected_logits.json"), "w"))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "logits" and len(sys.argv) == 5:
        cmd_logits(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "fixtures":
        cmd_fixtures(sys.argv[2])
    else:
        sys.exit(__doc__)
