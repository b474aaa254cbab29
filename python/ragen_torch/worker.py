"""The worker loop: a handshake, then one request frame in, one reply frame out, in order, until stdin closes.
Errors become replies {ok: false, error: {type, message, traceback}}; stdout is reserved for frames (anything else
printed goes to stderr); the process dies with its parent (PR_SET_PDEATHSIG on Linux, stdin EOF elsewhere).
"""

import argparse
import ctypes
import math
import os
import signal
import sys
import traceback

import torch

from . import PROTOCOL_VERSION
from .checkpoint import frozen_base_dir, save_model
from .dist import Dist
from .fsdp import full, gathered_state, is_sharded
from .generate import NonFiniteLogitsError, generate
from .model import make_decoder
from .optim import RoleOptimizer, load_optimizers, save_optimizers
from .protocol import read_frame, write_frame
from .roles import Roles
from .vision import images_from_buffers

# Rank r samples its share of the prompts with seed + r * RANK_SEED_STRIDE (a large prime), so each rank draws its
# own stream and the run stays reproducible for a given number of ranks.
RANK_SEED_STRIDE = 1000003


def die_with_parent():
    """Ask Linux to SIGKILL this process when the parent exits; exit now if the parent is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: stdin EOF still ends the loop
    expected = os.environ.get("RAGEN_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(1)


def pick_device(name, precision):
    """(device, autocast factory or None, precision name) with a clear error for what the machine lacks."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"device `{name}` was asked for, but torch {torch.__version__} sees no CUDA GPU (torch.version.cuda = {torch.version.cuda}); use device cpu or install a CUDA build of torch"
        )
    device = torch.device(name)
    if precision == "auto":
        precision = "bfloat16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "float32"
    if precision == "bfloat16":
        # bf16 compute under autocast, float32 weights, gradients and optimiser state. On the CPU autocast emulates it
        # (slow): there it serves to check this path without a GPU.
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise RuntimeError(
                f"precision bfloat16 needs a GPU with bf16 (Ampere or newer); {torch.cuda.get_device_name(device)} lacks it: use precision float32"
            )
        return device, (lambda: torch.autocast(device.type, dtype=torch.bfloat16)), precision
    if precision != "float32":
        raise RuntimeError(f"precision must be auto, float32 or bfloat16, got `{precision}`")
    return device, None, precision


class Worker:
    def __init__(self, device, autocast, budget, dist):
        self.device, self.dist = device, dist
        self.roles = Roles(device, autocast, budget, dist)
        self.autocast = autocast
        self.optimizers = {}
        self.pieces = None

    def optimizer(self, role):
        if role not in self.optimizers:
            self.optimizers[role] = RoleOptimizer(self.roles.parameters(role), self.dist)
        return self.optimizers[role]

    def handle(self, op, h, bufs):
        """The reply header and buffers of one request: the op's method from the dispatch table OPS."""
        method = OPS.get(op)
        if method is None:
            raise ValueError(f"unknown op `{op}`")
        return method(self, h, bufs)

    def op_load(self, h, bufs):
        self.roles.load(h)
        self.roles.budget = int(h["tokenBudget"])
        self.roles.graph_budget = int(h["graphTokenBudget"])
        self.roles.packing = bool(h["packing"])
        c = self.roles.policy.config
        n = sum(p.numel() for _, p in self.roles.parameters("policy"))
        return {
            "vocabSize": c.V,
            "hiddenSize": c.C,
            "lora": self.roles.policy.lora is not None,
            "trainableParameters": n,
        }, {}

    def op_vocab(self, h, bufs):
        self.pieces = list(h["pieces"])
        return {}, {}

    def op_generate(self, h, bufs):
        flat, lens = bufs["prompts"].tolist(), bufs["lengths"].tolist()
        prompts, off = [], 0
        for n in lens:
            prompts.append(flat[off : off + n])
            off += n
        images = images_from_buffers(bufs, len(prompts), self.roles.policy)
        mine = self.dist.rows(len(prompts))  # each rank samples its share of the prompts with its own seed
        params = dict(h["params"], seed=int(h["params"]["seed"]) + RANK_SEED_STRIDE * self.dist.rank)
        try:
            done = generate(
                self.roles.rollout_model(),
                [prompts[i] for i in mine],
                params,
                self.pieces,
                self.roles.budget * 16,
                self.autocast,
                source=self.roles.source,
                images=None if images is None else [images[i] for i in mine],
            )
        except NonFiniteLogitsError as e:  # name the prompt by its place in the request, not in this rank's share
            raise e.renumbered(mine[e.detail["index"]]) from None
        res = [None] * len(prompts)
        for rows, outs in self.dist.gather((mine, done)):
            for i, r in zip(rows, outs):
                res[i] = r
        tokens = [t for r in res for t in r[0]]
        lps = [x for r in res for x in r[1]]
        return {}, {
            "tokens": torch.tensor(tokens, dtype=torch.int32),
            "logprobs": torch.tensor(lps, dtype=torch.float32),
            "lengths": torch.tensor([len(r[0]) for r in res], dtype=torch.int32),
            "stopped": torch.tensor([r[2] == "stop" for r in res], dtype=torch.uint8),
        }

    def op_forward(self, h, bufs):
        ids = bufs["ids"].reshape(h["B"], h["T"]).to(self.device, torch.long)
        images = images_from_buffers(bufs, h["B"], self.roles.policy)
        return {}, self.roles.forward(h["role"], ids, bufs["lengths"].tolist(), bool(h.get("entropy")), images)

    def op_backward_begin(self, h, bufs):
        ids = bufs["ids"].reshape(h["B"], h["T"]).to(self.device, torch.long)
        return {}, self.roles.backward_begin(
            h["role"],
            ids,
            bufs["lengths"].tolist(),
            bool(h.get("entropy")),
            bool(h.get("values")),
            bool(h.get("diagnostic")),
            images_from_buffers(bufs, h["B"], self.roles.policy),
        )

    def op_backward_end(self, h, bufs):
        self.roles.backward_end({k: t.reshape(h["B"], h["T"]).to(self.device) for k, t in bufs.items()})
        return {}, {}

    def op_optimizer_step(self, h, bufs):
        self.dist.sync_grads(self.roles.parameters(h["role"]))
        r = self.optimizer(h["role"]).step(h["settings"])
        self.roles.weights_changed()
        norm = r["gradNorm"]
        if self.device.type == "cuda" and self.dist.rank == 0:  # the memory of a training step, on ragen's stderr
            peak = torch.cuda.max_memory_allocated(self.device)
            print(
                f"{h['role']} step: peak GPU memory {peak / 2**30:.2f} GiB since the last step (torch.cuda.max_memory_allocated)",
                file=sys.stderr,
                flush=True,
            )
            torch.cuda.reset_peak_memory_stats(self.device)
        return {"gradNorm": norm if math.isfinite(norm) else str(norm), "skipped": r["skipped"]}, {}

    def op_grad_norm(self, h, bufs):
        """The global gradient norm now (summed over ranks), the accumulating gradients untouched."""
        named = self.roles.parameters(h["role"])
        sq = sum(float(self.grad_sum(p).double().pow(2).sum()) for _, p in named)
        return {"gradNorm": math.sqrt(sq) if math.isfinite(sq) else str(sq)}, {}

    def op_stats(self, h, bufs):
        """Counters of the work done so far: chunks run through a model (all, and those recomputed in backward_end)."""
        return dict(self.roles.passes), {}

    def op_zero_grad(self, h, bufs):
        self.optimizer(h["role"]).zero_grad()
        return {}, {}

    def op_tensors(self, h, bufs):
        """Parameters or their gradients by name (tests, tools)."""
        named = self.roles.parameters(h["role"])
        if h.get("what") == "grad":  # summed over ranks without touching the accumulating gradients
            return {}, {n: self.grad_sum(p) for n, p in named}
        return {}, {n: full(p.detach()).float().cpu() for n, p in named}

    def op_save(self, h, bufs):
        if self.dist.rank == 0 or self.roles.sharded():  # replicated: rank 0's copy; sharded: all gather
            self.save(h)
        return {}, {}

    def op_load_optimizer(self, h, bufs):
        load_optimizers(h["dir"], self.optimizer)
        return {}, {}

    def grad_sum(self, p):
        """A parameter's gradient summed over ranks (every rank joins the same collectives, gradient or not)."""
        if is_sharded(p):  # reduce-scattered (fsdp.sum_scale); FSDP gives every rank a gradient or none
            return torch.zeros(p.shape) if p.grad is None else full(p.grad.detach()).float().cpu() * self.dist.sum_scale
        return self.dist.sum_((p.grad if p.grad is not None else torch.zeros_like(p)).detach().float().clone()).cpu()

    def save(self, h):
        r, d = self.roles, h["dir"]
        lead = self.dist.rank == 0
        policy, critic = r.policy, r.critic_model
        if r.sharded():  # whole weights gathered on every rank, kept in a CPU copy on rank 0 only
            r.parameters("policy")  # (puts the models back to their shards)
            policy = gathered_copy(r.policy, lead)
            critic = gathered_copy(r.critic_model, lead) if r.critic_mode == "separate" else None
        if h.get("optimizer"):
            save_optimizers(d, self.optimizers, write=lead, max_shard_bytes=h.get("maxShardBytes"))
        if not lead:
            return
        shared = r.value_head if r.critic_mode == "shared" else None
        base = frozen_base_dir(r.policy)  # the live policy's flags (a gathered copy's base looks frozen)
        save_model(d, policy, shared, r.source, h.get("tokenizerPath"), h.get("maxShardBytes"), base=base)
        if r.critic_mode == "separate":
            save_model(
                os.path.join(d, "critic"), critic, r.value_head, r.critic_source, max_shard_bytes=h.get("maxShardBytes")
            )


# The dispatch table: each op of the protocol and the Worker method that answers it.
OPS = {
    "load": Worker.op_load,
    "vocab": Worker.op_vocab,
    "generate": Worker.op_generate,
    "forward": Worker.op_forward,
    "backward_begin": Worker.op_backward_begin,
    "backward_end": Worker.op_backward_end,
    "optimizer_step": Worker.op_optimizer_step,
    "grad_norm": Worker.op_grad_norm,
    "zero_grad": Worker.op_zero_grad,
    "stats": Worker.op_stats,
    "tensors": Worker.op_tensors,
    "save": Worker.op_save,
    "load_optimizer": Worker.op_load_optimizer,
}


def gathered_copy(model, keep):
    """A CPU float32 Decoder (adapters included) holding a sharded model's whole weights when `keep`, else None; every
    rank must call it (the all-gathers)."""
    state = gathered_state(model, keep)
    if not keep:
        return None
    copy = make_decoder(model.config)
    if model.lora is not None:
        lo = model.lora
        copy.attach_lora(lo["r"], lo["alpha"], lo["dropout"], lo["target_modules"], None)
    copy.load_state_dict(state)
    return copy


def reference_blas(maps):
    """The netlib reference BLAS's path when this process mapped it (`maps`: /proc/self/maps's text), else None.
    Debian's python3-torch links libblas.so.3, which is that library unless OpenBLAS is installed: torch's CPU matrix
    products then run ~50x slower (a 512 x 512 product: 120 ms against 2.2 ms on this project's machine)."""
    for fields in map(str.split, maps.splitlines()):
        path = fields[5] if len(fields) >= 6 else ""  # address, perms, offset, dev, inode, path
        if os.path.basename(path).startswith("libblas.so") and os.path.basename(os.path.dirname(path)) == "blas":
            return path
    return None


def warn_reference_blas():
    try:
        with open("/proc/self/maps") as f:
            path = reference_blas(f.read())
    except OSError:
        return  # not Linux
    if path:
        print(
            f"[ragen_torch] torch's CPU matrix products run on the reference BLAS ({path}), ~50x slower than OpenBLAS: "
            "install OpenBLAS (Debian/Ubuntu: apt-get install libopenblas0) and start again",
            file=sys.stderr,
            flush=True,
        )


def is_oom(e):
    """CUDA's OutOfMemoryError, Python's MemoryError, or torch's CPU allocator failing."""
    m = str(e)
    return (
        type(e).__name__ == "OutOfMemoryError"
        or isinstance(e, MemoryError)
        or "out of memory" in m
        or "can't allocate memory" in m
    )


def oom_hint(op, h, bufs, budget):
    """What to lower after an out-of-memory error in request `op`, with the sizes the request ran with."""
    if op == "generate" and bufs.get("lengths") is not None:
        lens = bufs["lengths"].tolist()
        new = int(h.get("params", {}).get("maxNewTokens", 0))
        return (
            f"generate sampled {len(lens)} prompts at once (longest {max(lens, default=0)} tokens + {new} new, all held in one KV "
            f"cache; prefill runs up to 16 x model.torch.tokenBudget = {16 * budget} tokens at once): lower the rollouts per step "
            f"(env.train.N.groups x groupSize), the turn's max new tokens, or model.torch.tokenBudget (now {budget})"
        )
    if op in ("forward", "backward_begin", "backward_end") and "B" in h:
        return (
            f"{op} ran {h['B']} rows x {h['T']} tokens in chunks of at most model.torch.tokenBudget = {budget} tokens: lower "
            f"model.torch.tokenBudget (e.g. to {max(1, budget // 2)}) or trainer.microBatchSize (this micro-batch had {h['B']} rows), "
            "or set model.torch.gradientCheckpointing: true"
        )
    return f"lower model.torch.tokenBudget (now {budget}) or trainer.microBatchSize"


def error_reply(rid, e, op=None, h=None, bufs=None, budget=None):
    tb = traceback.format_exc().strip().splitlines()[-12:]
    message = str(e)
    error = {"type": type(e).__name__, "message": message, "traceback": "\n".join(tb)}
    if isinstance(getattr(e, "detail", None), dict):  # structured fields TypeScript rebuilds its own error from
        error["detail"] = e.detail
    if is_oom(e):
        hint = oom_hint(op, h or {}, bufs or {}, budget or 0)
        error["message"] = f"{message.splitlines()[0] if message else 'out of memory'} (out of memory: {hint})"
        error["outOfMemory"] = {"op": op, "tokenBudget": budget, "hint": hint}
    return {"id": rid, "ok": False, "error": error}


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m ragen_torch", description="ragen-ts's PyTorch worker (speaks frames on stdin/stdout)"
    )
    # No defaults here: src/engine/torch-worker.ts passes every setting (its defaults are written once, in TypeScript).
    ap.add_argument("--device", required=True)
    ap.add_argument("--precision", required=True)
    ap.add_argument("--token-budget", type=int, required=True)
    args = ap.parse_args(argv)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints (ours, torch's, C libraries') go to stderr, never into the frame stream
    sys.stdout = sys.stderr
    die_with_parent()
    # Threads: RAGEN_TORCH_THREADS, else RAGEN_THREADS (the local kernels' setting), else torch's default. On a busy
    # host fewer threads win by far (OpenMP threads spin while they wait for a core).
    threads = os.environ.get("RAGEN_TORCH_THREADS") or os.environ.get("RAGEN_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    dist = Dist()
    lead = dist.rank == 0  # only rank 0 reads requests and writes replies
    hello = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "pid": os.getpid(),
        "ranks": dist.world,
    }
    try:
        device, autocast, precision = pick_device(
            args.device
            if dist.world == 1 or args.device not in ("auto", "cuda") or not torch.cuda.is_available()
            else f"cuda:{dist.local_rank}",
            args.precision,
        )
        dist.init(device)
    except RuntimeError as e:
        if lead:
            write_frame(out, dict(hello, ok=False, error={"type": "DeviceError", "message": str(e), "traceback": ""}))
        return 1
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    if device.type == "cpu" and lead:
        warn_reference_blas()
    pids = dist.gather(os.getpid())
    if lead:
        write_frame(
            out,
            dict(
                hello,
                ok=True,
                pids=pids,
                device=str(device),
                deviceName=name,
                precision=precision,
                sharded=dist.sharded,
                sdpa=hasattr(torch.nn.functional, "scaled_dot_product_attention"),
            ),
        )
    worker = Worker(device, autocast, args.token_budget, dist)
    stdin = sys.stdin.buffer
    while True:
        frame = dist.share(read_frame(stdin) if lead else None)
        if frame is None:
            return 0  # the parent closed our stdin (or exited)
        h, bufs = frame
        rid, op = h.get("id"), h.get("op")
        if op == "shutdown":
            if lead:
                write_frame(out, {"id": rid, "ok": True})
            return 0
        try:
            reply, rbufs = worker.handle(op, h, bufs)
            if lead:
                write_frame(out, dict(reply, id=rid, ok=True), rbufs)
        except Exception as e:  # noqa: BLE001 -- every failure goes back to TypeScript as a structured reply
            if is_oom(e):  # free what the failed request held, so the next (smaller) one can run
                worker.roles.pending = None
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            if lead:
                write_frame(out, error_reply(rid, e, op, h, bufs, worker.roles.budget))
        finally:
            del frame, bufs


if __name__ == "__main__":
    sys.exit(main())
