"""AdamW with the semantics of src/engine/local-optim.ts: skip (and drop the gradients) on a NaN/Inf gradient, clip
to a global norm (torch's clip_grad_norm_ coefficient), decoupled weight decay; betas / eps / decay fixed at the
first step. State saved as `optimizer/<role>.safetensors` (`m.<param>`, `v.<param>`, metadata step), sharded past the
shard size into `<role>-0000i-of-0000n.safetensors` + `<role>.safetensors.index.json`, like the local engine's, so
either engine resumes the other's checkpoint.
"""

import math
import os

import torch

from .fsdp import full_like_param, is_sharded, local, shard_like_param
from .safetensors_io import CheckpointError, load_weight_files, save_weights


class RoleOptimizer:
    """AdamW over (name, parameter) pairs. With FSDP (fsdp.py) the parameters are sharded: each rank updates its own
    shard, and the norm and the finiteness check are summed over ranks (`dist`)."""

    def __init__(self, named, dist=None):
        self.named = named
        self.dist = dist if dist is not None and any(is_sharded(p) for _, p in named) else None
        self.m = self.v = None
        self.step_count = 0
        self.hyper = None

    def zero_grad(self):
        for _, p in self.named:
            p.grad = None

    def _sum(self, sharded, replicated):
        """sharded summed over ranks, plus replicated (the same on every rank)."""
        if self.dist is None:
            return sharded + replicated
        return float(self.dist.sum_(torch.tensor([sharded], dtype=torch.float64))[0]) + replicated

    def grad_norm(self):
        sq = [0.0, 0.0]  # sharded, replicated
        for _, p in self.named:
            if p.grad is not None:
                sq[0 if is_sharded(p) else 1] += float(local(p.grad).double().pow(2).sum())
        return math.sqrt(self._sum(*sq))

    def step(self, s):
        bad = [0.0, 0.0]
        for _, p in self.named:
            if p.grad is not None and not bool(torch.isfinite(local(p.grad)).all()):
                bad[0 if is_sharded(p) else 1] += 1
        finite = self._sum(*bad) == 0
        norm = self.grad_norm()
        if not finite:
            self.zero_grad()
            return {"gradNorm": norm, "skipped": True}
        clip = s.get("maxGradNorm") or 0
        if clip > 0:
            coef = clip / (norm + 1e-6)
            if coef < 1:
                for _, p in self.named:
                    if p.grad is not None:
                        local(p.grad).mul_(coef)
        self._ensure(s)
        lr = float(s["lr"])
        b1, b2, eps, wd = self.hyper
        self.step_count += 1
        bc1, bc2 = 1 - b1**self.step_count, 1 - b2**self.step_count
        with torch.no_grad():
            for i, (_, param) in enumerate(self.named):
                if param.grad is None:
                    continue
                p, g = local(param), local(param.grad)  # the whole tensor, or this rank's shard of it
                m, v = self.m[i], self.v[i]
                p.mul_(1 - lr * wd)
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, (v.sqrt() / math.sqrt(bc2)).add_(eps), value=-lr / bc1)
        self.zero_grad()
        return {"gradNorm": norm, "skipped": False}

    def _ensure(self, s):
        if self.hyper is None:
            betas = s.get("betas") or [0.9, 0.999]
            self.hyper = (
                float(betas[0]),
                float(betas[1]),
                float(s.get("eps", 1e-8)),
                float(s.get("weightDecay", 0.01)),
            )
        if self.m is None:
            self.m = [torch.zeros_like(local(p)) for _, p in self.named]
            self.v = [torch.zeros_like(local(p)) for _, p in self.named]

    def export(self):
        if self.m is None:
            return None
        w = {}
        for i, (name, p) in enumerate(self.named):  # sharded state is gathered whole (every rank must call this)
            w["m." + name] = full_like_param(self.m[i], p).float()
            w["v." + name] = full_like_param(self.v[i], p).float()
        return w

    def load(self, weights, step, source):
        m, v = [], []
        for name, p in self.named:
            for key, dst in (("m." + name, m), ("v." + name, v)):
                t = weights.get(key)
                if t is None or tuple(t.shape) != tuple(p.shape):
                    raise CheckpointError(f"{source}: `{key}` missing or not of shape {list(p.shape)}")
                dst.append(shard_like_param(t.to(local(p).device, torch.float32), p).clone())
        self.m, self.v, self.step_count = m, v, step


def save_optimizers(directory, optimizers, write=True, max_shard_bytes=None):
    """Write each role's state; with FSDP every rank calls this (the gathers) and only rank 0 has `write`."""
    folder = os.path.join(directory, "optimizer")
    if write:
        os.makedirs(folder, exist_ok=True)
    for role, opt in optimizers.items():
        w = opt.export()
        if w is not None and write:
            save_weights(folder, w, max_shard_bytes, file=role + ".safetensors", metadata={"step": opt.step_count})


def load_optimizers(directory, get):
    folder = os.path.join(directory, "optimizer")
    if not os.path.isdir(folder):
        raise CheckpointError(f"no optimizer state in {directory} (expected {folder}/); save with optimizer: true")
    for role in ("policy", "critic"):
        file = role + ".safetensors"
        if os.path.exists(os.path.join(folder, file)) or os.path.exists(os.path.join(folder, file + ".index.json")):
            w, meta, path = load_weight_files(folder, file)
            get(role).load(w, int(meta.get("step", 0)), path)
