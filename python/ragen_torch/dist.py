"""Data parallel over the ranks `torchrun` starts (gloo on CPU, NCCL on CUDA): rank 0 reads the requests and
broadcasts them; every rank holds the whole model, takes rows r, r+W, ... of a batch (prompts of a generate), and
the per-token outputs and the gradients are summed across ranks (the surrogate is a sum over tokens, so the sum of
the ranks' gradients is the one-rank gradient); every rank then takes the same AdamW step. One rank: all no-ops.
On several CUDA ranks the models are sharded with FSDP2 instead (fsdp.py): each rank then steps its own shard.
"""

import importlib
import os

import torch


class Dist:
    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = torch.device("cpu")
        self.sharded = False
        self.sum_scale = 1  # FSDP's reduce-scattered gradients times this are the sum over ranks (fsdp.sum_scale)

    def init(self, device):
        from .fsdp import wanted

        self.device = device
        self.sharded = wanted(
            device, self.world
        )  # FSDP2 on CUDA ranks (fsdp.py); else every rank holds the whole model
        if self.world > 1:
            import torch.distributed as dist

            if os.environ.get("RAGEN_TORCH_NO_LIBUV") == "1":  # set by launch.py: torch was built without libuv
                from .launch import mend_tcp_store

                mend_tcp_store(importlib.import_module("torch.distributed.rendezvous"))  # the module, not the function
            if device.type == "cuda":  # NCCL and FSDP's default device mesh use the current device: this rank's GPU
                torch.cuda.set_device(device)
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
            if self.sharded:
                from .fsdp import sum_scale

                self.sum_scale = sum_scale(device, self.world)

    def max_int(self, n):
        """The largest `n` over ranks."""
        if self.world == 1:
            return n
        import torch.distributed as dist

        t = torch.tensor([n], device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item())

    def share(self, frame):
        """Rank 0's frame (None at end of input) on every rank."""
        if self.world == 1:
            return frame
        import torch.distributed as dist

        box = [frame if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def rows(self, n):
        """This rank's rows of n."""
        return list(range(self.rank, n, self.world))

    def sum_(self, t):
        """Sum `t` over ranks, in place on this rank's copy (returned, on the CPU if it came from there)."""
        if self.world == 1:
            return t
        import torch.distributed as dist

        on = t.to(self.device)
        dist.all_reduce(on)
        return on.to(t.device) if on is not t else t

    def gather(self, obj):
        """Every rank's `obj`, in rank order."""
        if self.world == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def sync_grads(self, named):
        """Sum the gradients over ranks; a parameter keeps no gradient only when no rank has one (as on one rank).
        FSDP-sharded ones arrive reduce-scattered (as the mean over ranks on NCCL): scaled to the sum (fsdp.sum_scale)."""
        if self.world == 1:
            return
        from .fsdp import is_sharded, local

        for _, p in named:
            if is_sharded(p) and p.grad is not None:
                local(p.grad).mul_(self.sum_scale)
        named = [(n, p) for n, p in named if not is_sharded(p)]
        has = torch.tensor([0.0 if p.grad is None else 1.0 for _, p in named])
        has = self.sum_(has)
        for (_, p), h in zip(named, has.tolist()):
            if h == 0:
                continue
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            p.grad = self.sum_(p.grad)
