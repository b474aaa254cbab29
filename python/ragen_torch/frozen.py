"""Weights that do not train, kept in bf16 under bf16 autocast: the frozen reference, a LoRA model's base weights, and
the rollout copy of the policy that `generate` samples from (LoRA merged), refreshed lazily after optimizer steps. Autocast over float32
weights re-casts every weight at every call (each decode step included); a bf16 copy is cast once.
"""

import torch

from .fsdp import merged_copy
from .model import make_decoder

ROLLOUT_COPY_MODES = ("auto", "bf16", "none")


def rollout_copy_wanted(setting, device, autocast):
    """model.torch.rolloutCopy: `bf16` always, `none` never, `auto` on CUDA under bf16 autocast (a CPU keeps the float32
    policy: there the copy's memory buys nothing measured)."""
    if setting not in ROLLOUT_COPY_MODES:
        raise ValueError(
            f"rolloutCopy `{setting}` is not one of {', '.join(ROLLOUT_COPY_MODES)}; set model.torch.rolloutCopy to one of them"
        )
    return setting == "bf16" or (setting == "auto" and device.type == "cuda" and autocast is not None)


def empty_decoder(config, device, dtype):
    """A Decoder without adapters whose weights are uninitialised (filled by the caller), in `dtype` on `device`."""
    if hasattr(torch.device, "__enter__"):  # torch >= 2.0: no host allocation
        with torch.device("meta"):
            m = make_decoder(config).to(dtype)
        return m.to_empty(device=device).eval()
    return make_decoder(config).to(dtype).to(device).eval()


def freeze_bf16(model):
    """A frozen model in bf16 in place: no gradients, half the memory, no recast per forward under autocast."""
    return model.requires_grad_(False).to(torch.bfloat16)


def freeze_bf16_base(model):
    """A LoRA model's frozen base weights in bf16 in place (the adapters and a training vision tower stay float32): half
    the memory of a 7B base, and no recast per forward under autocast. Its checkpoints name the base's directory instead
    of writing it (checkpoint.py), or, when a vision tower trains, write float32 base weights (bf16 values)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".lora_" not in name and not p.requires_grad:
                p.data = p.data.to(torch.bfloat16)
    return model


class RolloutCopy:
    """The bf16 model generate samples from: the policy's weights (LoRA merged) as of its last optimizer step."""

    def __init__(self):
        self.model, self.stale = None, True

    def mark_stale(self):
        self.stale = True

    def get(self, policy):
        if self.model is None:
            self.model = empty_decoder(policy.config, policy.head_weight().device, torch.bfloat16)
        if self.stale:
            merged_copy(policy, self.model, torch.bfloat16)
            self.stale = False
        return self.model
