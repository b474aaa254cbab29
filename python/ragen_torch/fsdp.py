"""FSDP2 sharding of the worker's models over CUDA ranks (torch >= 2.4, `fully_shard`): each decoder layer is one
shard group, the root (embeddings, final norm, head) another; ranks then hold 1/N of the weights, gradients and AdamW
state. Helpers here turn sharded tensors (DTensors) into local shards and full tensors for the optimizer, checkpoints
and the rollout copy. RAGEN_TORCH_FSDP=all shards CPU (gloo) ranks too, which is how it is tested without GPUs
(src/engine/torch-dp.test.ts, torch >= 2.7); NOT RUN ON GPUs YET: see docs/gpu.md's Status.
"""

import importlib
import os

import torch


def fully_shard_api():
    """torch's fully_shard (2.6+: torch.distributed.fsdp; 2.4-2.5: the _composable module), or None."""
    for name in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp"):
        try:
            fn = getattr(importlib.import_module(name), "fully_shard", None)
        except Exception:  # noqa: BLE001 -- ImportError, or e.g. torch 1.13's FSDP failing to import on Python 3.11
            fn = None
        if fn is not None:
            return fn
    return None


def cpu_supported():
    """Whether this torch's FSDP2 runs on CPU ranks (gloo): torch >= 2.7, whose CPU streams have the event calls
    FSDP2 makes. torch 2.4-2.6 fail there."""
    return fully_shard_api() is not None and hasattr(torch.cpu.Stream, "record_event")


def checked_flag(world):
    """RAGEN_TORCH_FSDP's value, refused by name where it is not one of the three or asks `world` ranks of this torch
    for what they cannot do. The launcher asks before it starts any rank, so a refusal is one message, not one per
    rank."""
    flag = os.environ.get("RAGEN_TORCH_FSDP", "1")
    if flag not in ("0", "1", "all"):
        raise RuntimeError(
            f"RAGEN_TORCH_FSDP=`{flag}`: use 1 (shard with FSDP2 on several CUDA ranks, the default), all (on CPU ranks too) or 0 (every rank holds the whole model)"
        )
    if flag == "all" and world > 1 and not cpu_supported():
        raise RuntimeError(
            f"RAGEN_TORCH_FSDP=all: torch {torch.__version__} cannot run FSDP2 on CPU ranks (torch >= 2.7 can); use RAGEN_TORCH_FSDP=1 (shard CUDA ranks where torch has FSDP2) or 0"
        )
    return flag


def wanted(device, world):
    """Shard when several ranks run, torch has fully_shard and RAGEN_TORCH_FSDP asks for it: 1 (the default) on CUDA
    ranks, `all` on CPU ranks too (gloo; to run the sharded path without GPUs), 0 never."""
    flag = checked_flag(world)
    if world == 1 or flag == "0":
        return False
    return fully_shard_api() is not None and (device.type == "cuda" or flag == "all")


def shard(model):
    """Shard a Decoder in place: every layer, then the root (embeddings, final norm, head). Sharded models are run
    only through their module call (Decoder.forward, logits included), where FSDP's hooks gather the weights."""
    fully_shard = fully_shard_api()
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def sum_scale(device, world):
    """The factor that turns FSDP's reduce-scattered gradients into their sum over ranks: `world` where FSDP averages
    them (it asks the collective for ReduceOp.AVG, which NCCL computes), 1 where the backend sums instead (gloo on
    torch 2.6 takes AVG as SUM without a word). Measured, not assumed: a one-weight-per-rank module sharded like the
    models, whose gradient is 1 on every rank, reads back as 1 (mean) or `world` (sum). Every rank must join."""
    probe = torch.nn.Linear(1, world, bias=False).to(device)
    fully_shard_api()(probe)
    probe(torch.ones(1, 1, device=device)).sum().backward()
    got = float(full(probe.weight.grad).float().mean())
    if abs(got - 1) > 1e-3 and abs(got - world) > 1e-3:
        raise RuntimeError(
            f"FSDP's gradient reduction gave {got} for a gradient of 1 on each of {world} ranks (expected 1 or {world})"
        )
    return world if abs(got - 1) <= 1e-3 else 1


def reshard(model):
    """Put every FSDP group of `model` back to its shards. FSDP keeps the root's weights gathered after a forward;
    parameters read then (to build an optimizer, to save) would be the gathered copies, not the sharded parameters."""
    for m in model.modules():
        if hasattr(m, "reshard") and hasattr(m, "unshard"):  # FSDP2 modules (FSDP<Class>) have both
            m.reshard()
    return model


def is_sharded(t):
    return t is not None and hasattr(t, "placements") and hasattr(t, "to_local")


def local(t):
    """The shard this rank holds of a DTensor; a plain tensor as is."""
    return t.to_local() if is_sharded(t) else t


def full(t):
    """The whole tensor (an all-gather every rank must join) of a DTensor; a plain tensor as is."""
    return t.full_tensor() if is_sharded(t) else t


def full_like_param(shard_, p):
    """The whole tensor of a local shard laid out as parameter `p` (optimizer state); every rank must join."""
    if not is_sharded(p):
        return shard_
    DTensor = type(p)
    return DTensor.from_local(shard_, p.device_mesh, p.placements, shape=p.shape, stride=p.stride()).full_tensor()


def shard_like_param(t, p):
    """This rank's shard, laid out as parameter `p`, of the whole tensor `t` (optimizer state read from a file)."""
    if not is_sharded(p):
        return t
    try:
        from torch.distributed.tensor import distribute_tensor
    except ImportError:  # torch 2.4
        from torch.distributed._tensor import distribute_tensor
    return distribute_tensor(t.to(local(p).device), p.device_mesh, p.placements).to_local()


def gathered_state(model, keep):
    """{name: whole tensor} of a (sharded) model's state_dict, kept on the CPU only when `keep` (rank 0 writing a
    checkpoint); every rank runs the same all-gathers in the same order."""
    out = {}
    for name, t in model.state_dict().items():
        f = full(t.detach())
        if keep:
            out[name] = f.float().cpu()
        del f
    return out


def merged_copy(source, target, dtype):
    """Fill `target` (an unsharded Decoder without adapters) with `source`'s whole weights, LoRA merged in
    (W + scaling * B A): the model the rollout samples from, so decoding runs no collectives and CUDA graphs can
    capture it."""
    state = {n: t for n, t in source.state_dict().items()}
    scaling = {path: lin.scaling for path, _, lin in source.linears() if lin.lora_A is not None}
    with torch.no_grad():
        for name, dst in target.state_dict().items():
            w = full(state[name].detach()).float()
            path = name[: -len(".weight")] if name.endswith(".weight") else None
            if path in scaling and source.get_submodule(path).lora_on:
                a, b = full(state[path + ".lora_A"].detach()).float(), full(state[path + ".lora_B"].detach()).float()
                w = w + scaling[path] * (b @ a)
            dst.copy_(w.to(dtype))
    return target
