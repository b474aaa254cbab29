#!/usr/bin/env python3
"""PyTorch side of `ragen bench engine`: the reference model's train step and batched KV-cached decode.

Plain eager torch on `--threads` cores (ours uses the same number): torch.set_num_threads(threads). A torch
whose matrix products go through an external OpenBLAS (Debian's 1.13, `BLAS_INFO=generic`) is run with one
intra-op thread and OPENBLAS_NUM_THREADS=threads instead, its best setting on those cores (both pools at
`threads` oversubscribe them). Prints one JSON line:
{"trainStepMs", "decodeTokPerS", "peakRssMb", "torchVersion", "torchThreads", "blas"}.

usage: torch_bench.py CONFIG_JSON [--threads 2] [--steps 5] [--batch 8] [--seq 128] [--decode-batch 64] [--prompt 64]
       [--new 128]
CONFIG_JSON is a Hugging Face config.json (the same file our engine reads).
"""

import json
import math
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ref import forward, rms_norm, rotate_half  # noqa: E402


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def init_params(cfg, gen):
    C, H, K, F, V = (
        cfg["hidden_size"],
        cfg["num_attention_heads"],
        cfg["num_key_value_heads"],
        cfg["intermediate_size"],
        cfg["vocab_size"],
    )
    D = cfg.get("head_dim") or C // H
    p = {"model.embed_tokens.weight": torch.randn(V, C, generator=gen) * 0.02, "model.norm.weight": torch.ones(C)}
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        for name, shape in [
            ("q_proj", (H * D, C)),
            ("k_proj", (K * D, C)),
            ("v_proj", (K * D, C)),
            ("o_proj", (C, H * D)),
        ]:
            p[pre + f"self_attn.{name}.weight"] = torch.randn(*shape, generator=gen) * 0.02
        if cfg["model_type"] == "qwen2":
            for name, n in [("q_proj", H * D), ("k_proj", K * D), ("v_proj", K * D)]:
                p[pre + f"self_attn.{name}.bias"] = torch.zeros(n)
        for name, shape in [("gate_proj", (F, C)), ("up_proj", (F, C)), ("down_proj", (C, F))]:
            p[pre + f"mlp.{name}.weight"] = torch.randn(*shape, generator=gen) * 0.02
        p[pre + "input_layernorm.weight"] = torch.ones(C)
        p[pre + "post_attention_layernorm.weight"] = torch.ones(C)
    return p


def lin(p, name, x):
    y = x @ p[name + ".weight"].T
    b = p.get(name + ".bias")
    return y if b is None else y + b


@torch.no_grad()
def decode(cfg, p, prompts, new_tokens, gen):
    """Prefill the prompts, then sample `new_tokens` per sequence with a preallocated KV cache."""
    B, P = prompts.shape
    C, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D, G, L = cfg.get("head_dim") or C // H, H // K, cfg["num_hidden_layers"]
    eps, theta, S = cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0), P + new_tokens
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    emb = torch.arange(S, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((emb, emb), -1)
    cos_all, sin_all = emb.cos().float(), emb.sin().float()
    kc = torch.empty(L, B, K, S, D)
    vc = torch.empty(L, B, K, S, D)
    head = p["model.embed_tokens.weight"]
    ids, pos, out = prompts, 0, []
    for _ in range(new_tokens):
        T = ids.shape[1]
        cos, sin = cos_all[pos : pos + T], sin_all[pos : pos + T]
        h = head[ids]
        mask = torch.full((T, pos + T), float("-inf")).triu(pos + 1) if T > 1 else None
        for i in range(L):
            pre = f"model.layers.{i}."
            x = rms_norm(h, p[pre + "input_layernorm.weight"], eps)
            q = lin(p, pre + "self_attn.q_proj", x).view(B, T, H, D).transpose(1, 2)
            k = lin(p, pre + "self_attn.k_proj", x).view(B, T, K, D).transpose(1, 2)
            v = lin(p, pre + "self_attn.v_proj", x).view(B, T, K, D).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            kc[i, :, :, pos : pos + T] = k * cos + rotate_half(k) * sin
            vc[i, :, :, pos : pos + T] = v
            keys, vals = kc[i, :, :, : pos + T], vc[i, :, :, : pos + T]  # (B, K, S, D)
            att = (q.reshape(B, K, G * T, D) @ keys.transpose(-1, -2)) / math.sqrt(D)  # (B, K, G*T, S)
            att = att.view(B, K, G, T, pos + T)
            if mask is not None:
                att = att + mask
            y = (att.softmax(-1).reshape(B, K, G * T, pos + T) @ vals).reshape(B, H, T, D)
            h = h + lin(p, pre + "self_attn.o_proj", y.transpose(1, 2).reshape(B, T, H * D))
            x = rms_norm(h, p[pre + "post_attention_layernorm.weight"], eps)
            h = h + lin(
                p,
                pre + "mlp.down_proj",
                torch.nn.functional.silu(lin(p, pre + "mlp.gate_proj", x)) * lin(p, pre + "mlp.up_proj", x),
            )
        logits = rms_norm(h[:, -1], p["model.norm.weight"], eps) @ head.T
        logp = logits.log_softmax(-1)
        tok = torch.multinomial(logp.exp(), 1, generator=gen)
        out.append((tok, logp.gather(-1, tok)))
        pos += T
        ids = tok
    return out


def external_blas():
    """True when matmul goes through an external BLAS whose pool torch.set_num_threads does not control."""
    return "BLAS_INFO=generic" in torch.__config__.show() or "BLAS_INFO=open" in torch.__config__.show()


def main():
    threads = arg("--threads", 2)
    blas = "openblas" if external_blas() else "mkl" if "BLAS_INFO=mkl" in torch.__config__.show() else "other"
    # the caller sets OPENBLAS_NUM_THREADS=threads in the environment (it is read when the library loads)
    torch.set_num_threads(1 if blas == "openblas" else threads)
    cfg = json.load(open(sys.argv[1]))
    gen = torch.Generator().manual_seed(0)
    p = init_params(cfg, gen)
    for t in p.values():
        t.requires_grad_(True)
    opt = torch.optim.AdamW(list(p.values()), lr=1e-4, weight_decay=0.01)
    B, T, V = arg("--batch", 8), arg("--seq", 128), cfg["vocab_size"]
    ids = torch.randint(0, V, (B, T + 1), generator=gen)
    times = []
    for step in range(arg("--steps", 5) + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits, _ = forward(cfg, p, {}, ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        if step > 0:  # the first step is warm-up
            times.append((time.perf_counter() - t0) * 1000)
    for t in p.values():
        t.requires_grad_(False)
    nb, prompt_len, new = arg("--decode-batch", 64), arg("--prompt", 64), arg("--new", 128)
    prompts = torch.randint(0, V, (nb, prompt_len), generator=gen)
    decode(cfg, p, prompts, new, gen)  # warm-up with the timed call's shapes, as ours
    t0 = time.perf_counter()
    decode(cfg, p, prompts, new, gen)
    dt = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "trainStepMs": statistics.median(times),
                "decodeTokPerS": nb * new / dt,
                "peakRssMb": rss_mb,
                "torchVersion": torch.__version__,
                "torchThreads": threads,
                "blas": blas,
                "loss": loss.item(),
            }
        )
    )


if __name__ == "__main__":
    main()
