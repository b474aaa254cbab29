"""Tiny random checkpoints for the worker's tests, written and read back without the code under test: a hand-rolled
safetensors writer (struct + json), Hugging Face config.json dicts of each supported family, and a reference forward
pass in plain loops (one head, one position at a time) that the Decoder's batched one is held against.
"""

import importlib
import json
import math
import os
import struct

import pytest
import torch

# Small enough for a forward in milliseconds, big enough for grouped-query attention (H=4 over K=2) and two layers.
BASE = {
    "vocab_size": 40,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "bos_token_id": 1,
    "eos_token_id": 2,
}
FAMILIES = {
    "qwen2": {"model_type": "qwen2", "tie_word_embeddings": False},  # q/k/v bias, no o bias
    "qwen3": {"model_type": "qwen3", "tie_word_embeddings": True, "head_dim": 6},  # q/k norm, head_dim != C / H
    "llama": {"model_type": "llama", "tie_word_embeddings": False, "attention_bias": True},  # every projection biased
}


def config(family="qwen2", **over):
    return dict(BASE, **FAMILIES[family], **over)


def tensor_names(raw):
    """{HF name: shape} of a config, as Hugging Face's Qwen2/Qwen3/Llama modules name their weights."""
    V, C, F, H = raw["vocab_size"], raw["hidden_size"], raw["intermediate_size"], raw["num_attention_heads"]
    K = raw.get("num_key_value_heads") or H
    D = raw.get("head_dim") or C // H
    t = raw["model_type"]
    qkv_bias = t == "qwen2" or raw.get("attention_bias", False)
    o_bias = t != "qwen2" and raw.get("attention_bias", False)
    out = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    for i in range(raw["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = (C,)
        out[p + "post_attention_layernorm.weight"] = (C,)
        for m, n in (("q", H * D), ("k", K * D), ("v", K * D)):
            out[p + f"self_attn.{m}_proj.weight"] = (n, C)
            if qkv_bias:
                out[p + f"self_attn.{m}_proj.bias"] = (n,)
        out[p + "self_attn.o_proj.weight"] = (C, H * D)
        if o_bias:
            out[p + "self_attn.o_proj.bias"] = (C,)
        if t == "qwen3":
            out[p + "self_attn.q_norm.weight"] = (D,)
            out[p + "self_attn.k_norm.weight"] = (D,)
        out[p + "mlp.gate_proj.weight"] = (F, C)
        out[p + "mlp.up_proj.weight"] = (F, C)
        out[p + "mlp.down_proj.weight"] = (C, F)
    if not raw.get("tie_word_embeddings"):
        out["lm_head.weight"] = (V, C)
    return out


def random_weights(raw, seed=0, scale=0.3):
    """Weights N(0, scale) (norms 1 + N(0, 0.1)): large enough that the next-token distribution is far from uniform."""
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, shape in tensor_names(raw).items():
        noise = torch.randn(shape, generator=g)
        w[name] = 1 + 0.1 * noise if name.endswith("norm.weight") else scale * noise
    return w


def f32_bytes(t):
    flat = t.detach().float().reshape(-1).tolist()
    return struct.pack(f"<{len(flat)}f", *flat)


def write_st(path, tensors, metadata=None):
    """A float32 safetensors file by the format's description (u64 LE header length, JSON header, data in order)."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        b = f32_bytes(t)
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    raw_header(path, header, b"".join(blobs))


def raw_header(path, header, data, length=None):
    """A file of `header` (any JSON value, or bytes as given) over `data`; `length` overrides the u64 length field."""
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h) if length is None else length) + h + data)


STRUCT = {"F32": ("f", 4), "F64": ("d", 8), "I32": ("i", 4), "I64": ("q", 8), "F16": ("e", 2)}  # struct codes


def read_st(path):
    """({name: float64 tensor}, header) of a safetensors file of F32/F64/I32/I64/F16/BF16, read by the format's
    description."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        chunk = data[a:b]
        if e["dtype"] == "BF16":  # the top 16 bits of a float32
            vals = [struct.unpack("<f", b"\0\0" + chunk[i : i + 2])[0] for i in range(0, len(chunk), 2)]
        else:
            code, size = STRUCT[e["dtype"]]
            vals = list(struct.unpack(f"<{len(chunk) // size}{code}", chunk))
        out[name] = torch.tensor(vals, dtype=torch.float64).reshape(e["shape"])
    return out, header


def write_checkpoint(directory, raw, seed=0, weights=None):
    """config.json + model.safetensors of `raw` with random (or the given) weights; returns (directory, weights)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(raw, f)
    weights = random_weights(raw, seed) if weights is None else weights
    write_st(os.path.join(directory, "model.safetensors"), weights)
    return str(directory), weights


def reference_logits(w, raw, ids):
    """Logits (T, V) of one unpadded row `ids` (a list), computed position by position and head by head from the
    weights `w` by HF name, as the Qwen2/Qwen3/Llama papers and HF's modelling code describe the model."""
    C, H = raw["hidden_size"], raw["num_attention_heads"]
    K = raw.get("num_key_value_heads") or H
    D = raw.get("head_dim") or C // H
    eps, theta = raw["rms_norm_eps"], raw["rope_theta"]

    def rms(x, weight):
        return weight * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps))

    def lin(x, name):
        y = x @ w[name + ".weight"].t()
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def rope(v, pos):  # v (D,): pairs (i, i + D/2) rotated by pos * theta^(-2i/D)
        half = D // 2
        out = torch.empty_like(v)
        for i in range(half):
            a = pos * theta ** (-2 * i / D)
            c, s = math.cos(a), math.sin(a)
            out[i] = v[i] * c - v[i + half] * s
            out[i + half] = v[i + half] * c + v[i] * s
        return out

    T = len(ids)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]  # (T, C)
    for layer in range(raw["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = rms(x, w[p + "input_layernorm.weight"])
        q, k, v = lin(a, p + "self_attn.q_proj"), lin(a, p + "self_attn.k_proj"), lin(a, p + "self_attn.v_proj")
        heads = []
        for h in range(H):
            g = h // (H // K)  # the key/value head this query head reads
            qs, ks, vs = q[:, h * D : (h + 1) * D], k[:, g * D : (g + 1) * D], v[:, g * D : (g + 1) * D]
            if raw["model_type"] == "qwen3":
                qs, ks = rms(qs, w[p + "self_attn.q_norm.weight"]), rms(ks, w[p + "self_attn.k_norm.weight"])
            qs = torch.stack([rope(qs[t], t) for t in range(T)])
            ks = torch.stack([rope(ks[t], t) for t in range(T)])
            rows = []
            for t in range(T):  # position t attends to positions 0..t
                scores = (ks[: t + 1] @ qs[t]) / math.sqrt(D)
                rows.append(torch.softmax(scores, -1) @ vs[: t + 1])
            heads.append(torch.stack(rows))
        x = x + lin(torch.cat(heads, -1), p + "self_attn.o_proj")
        m = rms(x, w[p + "post_attention_layernorm.weight"])
        gate, up = lin(m, p + "mlp.gate_proj"), lin(m, p + "mlp.up_proj")
        x = x + lin(gate * torch.sigmoid(gate) * up, p + "mlp.down_proj")
    x = rms(x, w["model.norm.weight"])
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ head.t()


def reference_logprobs(w, raw, ids):
    """log p(ids[t] | ids[:t]) for t = 1 .. T-1, (T-1,)."""
    lp = torch.log_softmax(reference_logits(w, raw, ids)[:-1], -1)
    return lp.gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1)


def require_hf(name):
    """Hugging Face's `name` (transformers, peft) imported, or the calling test module skipped where it is not
    installed; RAGEN_REQUIRE_HF=1 (the wheel environment's lane in CI) makes a missing one an import error instead."""
    if os.environ.get("RAGEN_REQUIRE_HF") == "1":
        return importlib.import_module(name)
    return pytest.importorskip(name, reason=f"{name} is not installed (pip install {name})")
