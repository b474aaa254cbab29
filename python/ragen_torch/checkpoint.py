"""Saving the worker's models as src/model/checkpoint.ts does: config.json + generation_config.json + model.safetensors
(float32, cast tensor by tensor as written; sharded past max_shard_bytes, 1 GiB by default), the LoRA adapter in PEFT's
layout under adapter/ (a vision-language model's under the module names PEFT gives it), value_head.safetensors, a
separate critic under critic/, tokenizer files copied; the local engine and transformers / PEFT load the result. A
LoRA model over a frozen base read from a directory is saved as PEFT's save_pretrained saves one: the adapter naming
its base (absolute), no base weights.
"""

import json
import os
import shutil

import torch

from .safetensors_io import save_weights, write_safetensors
from .vision import adapter_names_for_peft, language_model_pattern


def peft_config(lora, base="..", vision=False):
    """PEFT's adapter_config.json; a vision-language model's target_modules is a regex over its language model."""
    targets = language_model_pattern(lora["target_modules"]) if vision else list(lora["target_modules"])
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base,
        "r": lora["r"],
        "lora_alpha": lora["alpha"],
        "lora_dropout": lora["dropout"],
        "target_modules": targets,
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "use_rslora": False,
        "use_dora": False,
        "modules_to_save": None,
        "layers_to_transform": None,
        "layers_pattern": None,
        "rank_pattern": {},
        "alpha_pattern": {},
        "revision": None,
    }


def frozen_base_dir(model):
    """`model.base_dir` when the model carries LoRA adapters over a base that is frozen and so unchanged; else None. A
    training vision tower is base that changes: then the whole model is written."""
    if model.lora is None or getattr(model, "base_dir", None) is None:
        return None
    trains = any(p.requires_grad for name, p in model.named_parameters() if ".lora_" not in name)
    return None if trains else model.base_dir


def save_model(directory, model, value_head=None, source=None, tokenizer_path=None, max_shard_bytes=None, base=None):
    """Write `model` as a Hugging Face checkpoint directory. `base`: the directory holding its frozen base weights
    (frozen_base_dir), written as PEFT's save_pretrained writes a LoRA model: adapter/ with base_model_name_or_path =
    `base`, and no model.safetensors (rewriting an unchanged base cost its float32 size on disk at every checkpoint)."""
    os.makedirs(directory, exist_ok=True)
    raw = dict(model.config.raw, torch_dtype="float32")
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(raw, f, indent=2)
    gen = os.path.join(source, "generation_config.json") if source else None
    if (
        gen
        and os.path.exists(gen)
        and os.path.abspath(gen) != os.path.abspath(os.path.join(directory, "generation_config.json"))
    ):
        shutil.copyfile(gen, os.path.join(directory, "generation_config.json"))
    elif not gen or not os.path.exists(gen):
        ids = {k: raw[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in raw}
        with open(os.path.join(directory, "generation_config.json"), "w") as f:
            json.dump(ids, f, indent=2)
    if base is None:  # cast tensor by tensor, not a float32 model copy
        save_weights(directory, model.base_state(), max_shard_bytes, dtype=torch.float32)
    elif os.path.realpath(directory) != os.path.realpath(base):
        # weights left in `directory` by an earlier save would be read instead of the named base (weights_dir);
        # `directory` may be the base itself under another name (a symlink), whose weights must stay
        for name in ("model.safetensors", "model.safetensors.index.json"):
            if os.path.exists(os.path.join(directory, name)):
                os.remove(os.path.join(directory, name))
    if model.lora is not None:
        adir = os.path.join(directory, "adapter")
        os.makedirs(adir, exist_ok=True)
        vision = getattr(model.config, "vision", None) is not None
        with open(os.path.join(adir, "adapter_config.json"), "w") as f:
            json.dump(peft_config(model.lora, ".." if base is None else os.path.abspath(base), vision), f, indent=2)
        adapters = {k: p for k, p in model.trainable() if ".lora_" in k}  # a training vision tower is in the base
        if vision:  # under the names PEFT gives a Qwen2.5-VL's or Qwen3-VL's language model (vision.py)
            adapters = adapter_names_for_peft(adapters)
        write_safetensors(os.path.join(adir, "adapter_model.safetensors"), adapters, dtype=torch.float32)
    if value_head is not None:
        write_safetensors(
            os.path.join(directory, "value_head.safetensors"),
            {"value_head.weight": value_head.weight.float(), "value_head.bias": value_head.bias.float()},
        )
    if tokenizer_path:
        if not os.path.exists(tokenizer_path):
            raise FileNotFoundError(f"tokenizer file not found: {tokenizer_path}")
        for src in (tokenizer_path, os.path.join(os.path.dirname(tokenizer_path), "tokenizer_config.json")):
            dst = os.path.join(directory, os.path.basename(src))
            if os.path.exists(src) and os.path.abspath(src) != os.path.abspath(dst):
                shutil.copyfile(src, dst)
