"""`ragen bench gpu`'s measurements (python -m ragen_torch.bench): rollout tokens/s on a multi-turn rollout shape beside
transformers' generate, the update's MFU, one StarPO step's engine-side time broken down with peak memory, and our
logits beside transformers'. Prints progress on stderr and one JSON object on stdout.
"""

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time

import torch

from . import packing
from .dist import Dist
from .generate import generate
from .optim import RoleOptimizer
from .random_checkpoint import SHAPES, write_random_checkpoint
from .roles import Roles
from .safetensors_io import CheckpointError
from .worker import pick_device

# Dense bf16 tensor-core peaks (FLOP/s) by GPU name, from the vendor's data sheets; first match wins.
BF16_PEAKS = [("H100 PCIe", 756e12), ("H100", 989e12), ("H200", 989e12), ("A100", 312e12)]


def bf16_peak(name):
    for key, flops in BF16_PEAKS:
        if key in name:
            return flops
    return None


def log(*a):
    print("[bench gpu]", *a, file=sys.stderr, flush=True)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device, fn):
    sync(device)
    t = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - t


def peak_memory(device):
    """Peak bytes allocated by torch on the GPU, or the process's peak resident set on the CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak(device):
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def import_transformers():
    try:
        import transformers  # noqa: F401

        return transformers
    except Exception:  # noqa: BLE001 -- any import failure means no comparison
        return None


def dtype_arg(hf, dtype):
    """from_pretrained's dtype keyword: `dtype` from transformers 4.56 (which deprecates `torch_dtype`), else
    `torch_dtype`."""
    try:
        newer = tuple(int(x) for x in hf.__version__.split(".")[:2]) >= (4, 56)
    except ValueError:  # a version that is not numbers (a development build, the tests' double)
        newer = False
    return {"dtype": dtype} if newer else {"torch_dtype": dtype}


def rollout_ours(model, contexts, a, autocast, budget, V, gen):
    """The multi-turn rollout with our sampler: per turn, every context gets up to --new-tokens sampled tokens, then
    --obs-tokens random 'observation' tokens. Returns (generated tokens, seconds, final contexts, [(tokens, seconds)] per turn)."""
    params = {
        "maxNewTokens": a.new_tokens,
        "temperature": 1.0,
        "topK": 0,
        "topP": 1.0,
        "seed": a.seed,
        "stopTokenIds": [],
    }
    generate(
        model, contexts[:2], dict(params, maxNewTokens=4), None, budget * 16, autocast
    )  # warm-up: CUDA/cuBLAS set-up
    per_turn = []
    for turn in range(a.turns):
        out, dt = timed(
            model.head_weight().device,
            lambda: generate(model, contexts, dict(params, seed=a.seed + turn), None, budget * 16, autocast),
        )
        per_turn.append((sum(len(r[0]) for r in out), dt))
        contexts = [
            c + r[0] + torch.randint(0, V, (a.obs_tokens,), generator=gen).tolist() for c, r in zip(contexts, out)
        ]
        log(f"rollout turn {turn + 1}/{a.turns}: {per_turn[-1][0]} tokens in {dt:.2f} s")
    return sum(t for t, _ in per_turn), sum(s for _, s in per_turn), contexts, per_turn


def rollout_hf(hf_model, contexts, a, V, gen, device):
    """The same rollout shape through transformers' generate (sampling, exactly --new-tokens a turn), for the first
    --transformers-turns turns only (its generate is the slow side: the ratio then costs less than the measurement)."""
    total, seconds = 0, 0.0
    with torch.no_grad():  # warm-up, as ours
        w = torch.tensor([contexts[0][:8]] * 2, device=device)
        hf_model.generate(
            input_ids=w, attention_mask=torch.ones_like(w), max_new_tokens=4, do_sample=True, pad_token_id=0
        )
    for turn in range(a.transformers_turns):
        P = max(len(c) for c in contexts)
        ids = torch.zeros(len(contexts), P, dtype=torch.long)
        mask = torch.zeros(len(contexts), P, dtype=torch.long)
        for i, c in enumerate(contexts):
            ids[i, P - len(c) :] = torch.tensor(c)
            mask[i, P - len(c) :] = 1
        ids, mask = ids.to(device), mask.to(device)
        kw = dict(
            max_new_tokens=a.new_tokens,
            min_new_tokens=a.new_tokens,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            pad_token_id=0,
        )
        with torch.no_grad():
            out, dt = timed(device, lambda: hf_model.generate(input_ids=ids, attention_mask=mask, **kw))
        new = out[:, P:].cpu()
        seconds += dt
        total += new.numel()
        contexts = [
            c + new[i].tolist() + torch.randint(0, V, (a.obs_tokens,), generator=gen).tolist()
            for i, c in enumerate(contexts)
        ]
        log(f"transformers turn {turn + 1}/{a.transformers_turns}: {new.numel()} tokens in {dt:.2f} s")
    return total, seconds


def padded(contexts, device):
    L = max(len(c) for c in contexts)
    ids = torch.zeros(len(contexts), L, dtype=torch.long)
    for i, c in enumerate(contexts):
        ids[i, : len(c)] = torch.tensor(c)
    return ids.to(device), [len(c) for c in contexts]


def starpo_step(roles, contexts, a, device, peak_flops, n_params):
    """Old and reference log-probs over the rollout, then one update: backward of random per-token output gradients
    over micro-batches of --micro-batch trajectories (0: cut by the token budget as the trainer cuts them, one worker
    chunk each), and an AdamW step."""
    ids, lengths = padded(contexts, device)
    _, old_s = timed(device, lambda: roles.forward("policy", ids, lengths, False))
    _, ref_s = timed(device, lambda: roles.forward("reference", ids, lengths, False))
    opt = RoleOptimizer(roles.parameters("policy"))
    gen = torch.Generator().manual_seed(a.seed)

    if a.micro_batch > 0:
        micro = [list(range(s, min(s + a.micro_batch, len(contexts)))) for s in range(0, len(contexts), a.micro_batch)]
    else:  # src/train/micro-batches.ts's cut on one rank: the worker's own chunks
        micro = list(packing.chunks(lengths, range(len(contexts)), roles.budget, roles.packing))

    def update():
        for rows in micro:
            x, ln = ids[torch.tensor(rows, device=ids.device)], [lengths[r] for r in rows]
            roles.backward_begin("policy", x, ln, True, False)
            B, T = x.shape
            grads = {
                "logprobs": torch.randn(B, T, generator=gen).to(device) * 1e-3,
                "entropy": torch.randn(B, T, generator=gen).to(device) * 1e-4,
            }
            roles.backward_end(grads)
        return opt.step({"lr": 1e-6, "maxGradNorm": 1.0})

    before = dict(roles.passes)
    _, update_s = timed(device, update)
    passes = {
        k: v - before[k] for k, v in roles.passes.items()
    }  # a recomputed pass is a second forward the MFU counts as nothing
    tokens = sum(lengths)
    flops = 6 * n_params * tokens
    return {
        "oldLogprobsSeconds": old_s,
        "refLogprobsSeconds": ref_s,
        "updateSeconds": update_s,
        "updateTokens": tokens,
        "updateFlops": flops,
        "updateTflops": flops / update_s / 1e12,
        "updateBackwards": len(micro),
        **passes,
        "mfu": flops / update_s / peak_flops if peak_flops else None,
    }


def our_logits(model, device, autocast, V, seed):
    """Our logits (CPU float32) on 2 random sequences of 64 tokens, in float32 and, when the device runs it, bf16;
    taken before the update changes the weights."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (2, 64), generator=gen)
    out = {}
    with torch.no_grad():
        for name, ac in [("float32", None)] + ([("bfloat16", autocast)] if autocast is not None else []):
            with ac() if ac else contextlib.nullcontext():
                out[name] = model.logits(model.hidden(ids.to(device))).float().cpu()
    return ids, out


def compare_logits(path, hf, device, ids, ours):
    """Max |ours - transformers'| logits on the same checkpoint and sequences, per precision."""
    res = {}
    for name, theirs_ours in ours.items():
        dtype = torch.bfloat16 if name == "bfloat16" else torch.float32
        ref = hf.AutoModelForCausalLM.from_pretrained(path, **dtype_arg(hf, dtype)).to(device).eval()
        with torch.no_grad():
            theirs = ref(input_ids=ids.to(device)).logits.float().cpu()
        res[name] = {"maxAbsDiff": float((theirs_ours - theirs).abs().max()), "maxAbsLogit": float(theirs.abs().max())}
        del ref
    return res


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m ragen_torch.bench")
    ap.add_argument("--shape", default="qwen2.5-0.5b", help=f"random-weight model shape: {', '.join(SHAPES)}")
    ap.add_argument("--model", help="a Hugging Face model directory to use instead of random weights")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--trajectories", type=int, default=128)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument(
        "--transformers-turns", type=int, help="turns of transformers' rollout, the first of ours (default: --turns)"
    )
    ap.add_argument("--new-tokens", type=int, default=400)
    ap.add_argument("--prompt-tokens", type=int, default=200)
    ap.add_argument("--obs-tokens", type=int, default=50)
    ap.add_argument(
        "--micro-batch",
        type=int,
        default=2,
        help="trajectories per backward; 0: cut by --token-budget (rows longest first)",
    )
    ap.add_argument("--packing", action="store_true", help="model.torch.packing: pack each chunk's rows padding-free")
    ap.add_argument("--token-budget", type=int, default=16384)
    ap.add_argument("--peak-tflops", type=float, help="the device's bf16 peak, when its name is not in the table")
    ap.add_argument("--no-transformers", action="store_true", help="skip transformers even when importable")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv=None):
    """Exit 0 with the JSON report; 2 on bad input (a named error line on stderr); 3 when the device ran out of memory."""
    a = parse(argv)
    try:
        return run(a)
    except (CheckpointError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        if type(e).__name__ != "OutOfMemoryError" and "out of memory" not in str(e):
            if "sees no CUDA GPU" in str(e) or "needs a GPU" in str(e):
                print(f"error: {e}", file=sys.stderr)
                return 2
            raise
        print(
            f"error: out of memory ({str(e).splitlines()[0]}): lower --micro-batch ({a.micro_batch}), --token-budget ({a.token_budget}) "
            f"or --trajectories ({a.trajectories})",
            file=sys.stderr,
        )
        return 3


def run(a):
    a.transformers_turns = a.turns if a.transformers_turns is None else a.transformers_turns
    if not 1 <= a.transformers_turns <= a.turns:
        raise ValueError(f"--transformers-turns {a.transformers_turns}: give 1 to --turns ({a.turns})")
    if a.model and not os.path.isdir(a.model):
        raise ValueError(
            f"--model {a.model}: not a directory (give a Hugging Face model directory with config.json + *.safetensors)"
        )
    threads = os.environ.get("RAGEN_TORCH_THREADS") or os.environ.get("RAGEN_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    device, autocast, precision = pick_device(a.device, a.precision)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = a.peak_tflops * 1e12 if a.peak_tflops else (bf16_peak(name) if device.type == "cuda" else None)
    tmp = None
    path = a.model
    if not path:
        tmp = tempfile.TemporaryDirectory(prefix="ragen-bench-gpu-")
        log(f"writing a random-weight {a.shape} checkpoint")
        path = write_random_checkpoint(
            tmp.name, a.shape, a.seed, device=device.type
        )  # drawn where the model runs: fast on a GPU
    try:
        roles = Roles(device, autocast, a.token_budget, Dist())
        roles.packing = a.packing
        roles.load({"path": path, "reference": True, "seed": a.seed})
        model = roles.policy
        c = model.config
        n_params = sum(p.numel() for p in model.parameters())
        gen = torch.Generator().manual_seed(a.seed)
        prompts = [torch.randint(0, c.V, (a.prompt_tokens,), generator=gen).tolist() for _ in range(a.trajectories)]
        from .decode import decode_mode

        report = {
            "device": str(device),
            "deviceName": name,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "precision": precision,
            "decode": decode_mode(device),
            "model": a.model or f"random {a.shape}",
            "parameters": n_params,
            "shape": {
                "trajectories": a.trajectories,
                "turns": a.turns,
                "newTokens": a.new_tokens,
                "promptTokens": a.prompt_tokens,
                "obsTokens": a.obs_tokens,
                "microBatch": a.micro_batch,
                "packing": a.packing,
            },
            "bf16PeakTflops": peak / 1e12 if peak else None,
        }
        logit_ids, ours = our_logits(model, device, autocast, c.V, a.seed)
        reset_peak(device)
        # The model the worker samples from: on CUDA with bf16, the bf16 rollout copy (frozen.py); else the policy.
        sampler = roles.rollout_model()
        report["rolloutModel"] = str(sampler.head_weight().dtype).replace("torch.", "")
        tokens, seconds, contexts, per_turn = rollout_ours(
            sampler, prompts, a, autocast, a.token_budget, c.V, torch.Generator().manual_seed(a.seed + 1)
        )
        del sampler
        rollout_peak = peak_memory(device)
        report["rollout"] = {
            "tokens": tokens,
            "seconds": seconds,
            "tokensPerSecond": tokens / seconds,
            "turns": [{"tokens": t, "seconds": s} for t, s in per_turn],
        }
        step = starpo_step(roles, contexts, a, device, peak, n_params)
        report["update"] = {
            k: step[k]
            for k in (
                "updateTokens",
                "updateSeconds",
                "updateFlops",
                "updateTflops",
                "mfu",
                "updateBackwards",
                "forwardPasses",
                "recomputedPasses",
            )
        }
        report["step"] = {
            "rolloutSeconds": seconds,
            "oldLogprobsSeconds": step["oldLogprobsSeconds"],
            "refLogprobsSeconds": step["refLogprobsSeconds"],
            "updateSeconds": step["updateSeconds"],
            "peakMemoryBytes": max(rollout_peak, peak_memory(device)),
            "rolloutPeakMemoryBytes": rollout_peak,
        }
        report["step"]["totalSeconds"] = (
            seconds + step["oldLogprobsSeconds"] + step["refLogprobsSeconds"] + step["updateSeconds"]
        )
        hf = None if a.no_transformers else import_transformers()
        if hf is None:
            why = "skipped (--no-transformers)" if a.no_transformers else "transformers not importable: no ratio"
            log(why)
            report["transformers"] = {"available": False, "note": why}
        else:
            del roles, model  # room for transformers' copy
            ref = (
                hf.AutoModelForCausalLM.from_pretrained(
                    path, **dtype_arg(hf, torch.bfloat16 if autocast else torch.float32)
                )
                .to(device)
                .eval()
            )
            ht, hs = rollout_hf(ref, prompts, a, c.V, torch.Generator().manual_seed(a.seed + 1), device)
            del ref
            # The ratio compares the same turns: ours over the turns transformers ran (later turns have longer contexts).
            n = a.transformers_turns
            ours_same = sum(t for t, _ in per_turn[:n]) / sum(s for _, s in per_turn[:n])
            report["transformers"] = {
                "available": True,
                "version": hf.__version__,
                "turns": n,
                "rolloutTokens": ht,
                "rolloutSeconds": hs,
                "tokensPerSecond": ht / hs,
                "oursTokensPerSecondSameTurns": ours_same,
                "rolloutSpeedup": ours_same / (ht / hs),
                "logits": compare_logits(path, hf, device, logit_ids, ours),
            }
        print(json.dumps(report), file=sys.__stdout__, flush=True)
        return 0
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
