"""`ragen bench gpu --check`'s FSDP2 stage: the tiny random shape sharded with fully_shard over two CPU ranks (gloo)
against one unsharded copy: outputs, gradients (scaled to the sum over ranks as the worker scales them,
fsdp.sum_scale), an AdamW step, and a checkpoint gathered whole and read back. Runs on the CPU so one GPU suffices;
a torch whose FSDP2 cannot run on CPU ranks (< 2.7) reports the stage as skipped. The worker's own sharded path is
tested the same way by src/engine/torch-dp.test.ts.
"""

import json
import os
import sys
import tempfile

import torch

from .fsdp import cpu_supported, full, fully_shard_api, gathered_state, sum_scale
from .model import load_decoder
from .random_checkpoint import write_random_checkpoint
from .safetensors_io import save_weights

WORLD = 2
LR = 1e-2


def log(*a):
    print("[check fsdp]", *a, file=sys.stderr, flush=True)


def fsdp():
    if not cpu_supported():
        v = ".".join(torch.__version__.split("+")[0].split(".")[:2])
        why = "has no FSDP2" if fully_shard_api() is None else "cannot run FSDP2 on CPU ranks (torch >= 2.7 can)"
        log(f"skipped: torch {v} {why}")
        return {"skipped": True, "note": f"torch {v} {why}"}
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the ranks run on the CPU (gloo), whatever GPU the machine has
    with tempfile.TemporaryDirectory(prefix="ragen-check-fsdp-") as tmp:
        ckpt = write_random_checkpoint(os.path.join(tmp, "model"), "tiny", 7, torch.float32)
        torch.multiprocessing.spawn(_rank, args=(tmp, ckpt), nprocs=WORLD, join=True)
        with open(os.path.join(tmp, "result.json")) as f:
            return json.load(f)


def _max_diff(a, b):
    return float((a.detach().float() - b.detach().float()).abs().max())


def _rank(rank, tmp, ckpt):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "store"), rank=rank, world_size=WORLD)
    mesh = init_device_mesh("cpu", (WORLD,))
    fully_shard = fully_shard_api()
    cpu = torch.device("cpu")
    ref = load_decoder(ckpt, cpu)  # every rank builds the one-rank reference: it is tiny
    model = load_decoder(ckpt, cpu)
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if rank == 0:
        log(f"sharded over {WORLD} CPU ranks (gloo), torch {torch.__version__}")

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.V, (4, 10), generator=g)
    w = torch.randn(4, 10, model.config.V, generator=g)  # a linear loss: d loss / d logits = w
    # Each rank runs its half of the rows; the ranks' gradients, scaled as the worker scales them, are the sum of the
    # two halves' gradients: the one-rank gradient of the whole batch.
    scale = sum_scale(cpu, WORLD)
    _, logits = model(ids[rank::WORLD], with_logits=True)
    (logits * w[rank::WORLD]).sum().backward()
    _, ref_logits = ref(ids, with_logits=True)
    (ref_logits * w).sum().backward()

    out = torch.tensor([_max_diff(logits, ref_logits[rank::WORLD])])
    dist.all_reduce(out, op=dist.ReduceOp.MAX)
    ref_params = dict(ref.named_parameters())
    grad_worst, grad_rel = "", 0.0
    for name, p in model.named_parameters():  # full() is a collective: every rank walks the same names in order
        gf, gr = full(p.grad) * scale, ref_params[name].grad
        rel = _max_diff(gf, gr) / (float(gr.abs().max()) + 1e-12)
        if rel > grad_rel:
            grad_worst, grad_rel = name, rel
    if rank == 0:
        log(f"outputs max diff {float(out):.2e}; gradients max relative diff {grad_rel:.2e} ({grad_worst})")

    for p in model.parameters():
        p.grad.mul_(scale)  # the worker's sync_grads
    for m in (model, ref):
        torch.optim.AdamW(m.parameters(), lr=LR, weight_decay=0.01).step()
    step_diff = 0.0
    for name, p in model.named_parameters():
        step_diff = max(step_diff, _max_diff(full(p.detach()), ref_params[name]))
    if rank == 0:
        log(f"after one AdamW step (lr {LR}): weights max diff {step_diff:.2e}")

    state = gathered_state(model, keep=rank == 0)
    result = None
    if rank == 0:
        d = os.path.join(tmp, "gathered")
        save_weights(d, state)
        with open(os.path.join(d, "config.json"), "w") as f, open(os.path.join(ckpt, "config.json")) as src:
            f.write(src.read())
        back = load_decoder(d, cpu).state_dict()
        ckpt_diff = max(_max_diff(back[n], t) for n, t in ref.state_dict().items())
        log(f"gathered checkpoint read back: max diff to the one-rank weights {ckpt_diff:.2e}")
        tol = {"outputs": 1e-4, "gradientsRelative": 1e-3, "step": 0.25 * LR, "checkpoint": 0.25 * LR}
        result = {
            "ranks": WORLD,
            "backend": "gloo",
            "sumScale": scale,
            "device": "cpu",
            "torch": torch.__version__,
            "outputsMaxDiff": float(out),
            "gradientsMaxRelDiff": grad_rel,
            "gradientsWorst": grad_worst,
            "stepMaxDiff": step_diff,
            "checkpointMaxDiff": ckpt_diff,
            "tolerances": tol,
            "passed": float(out) < tol["outputs"]
            and grad_rel < tol["gradientsRelative"]
            and step_diff < tol["step"]
            and ckpt_diff < tol["checkpoint"],
        }
        with open(os.path.join(tmp, "result.json"), "w") as f:
            json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()
    # Leave without the interpreter's teardown: on torch 2.13 a rank's exit after the gloo group is gone sometimes
    # aborts ("terminate called without an active exception", SIGABRT; once in two CPU runs), failing a check whose
    # result is already written. Everything this rank owes is done and flushed above.
    sys.stderr.flush()
    os._exit(0)
