#!/usr/bin/env python3
"""Golden reference for src/model: the Llama/Qwen2/Qwen3 decoder (+ PEFT-style LoRA, + value head) in plain torch.

Our own implementation of the architecture (not transformers), following the Hugging Face modeling code's
conventions (RMSNorm in float, rotate_half RoPE, repeat_kv GQA). Reads a checkpoint directory written by
src/model (config.json, model.safetensors, adapter/ with PEFT's adapter_config.json + adapter_model.safetensors, optional value_head.safetensors) and an inputs JSON, runs forward + backward, and writes a safetensors file
with `logits`, `loss`, `values` (if a value head) and `grad.<parameter name>` for every trainable parameter.

usage: torch_ref.py [--dtype float64|float32] CHECKPOINT_DIR INPUTS_JSON OUT_SAFETENSORS [CHECKPOINT_DIR INPUTS_JSON OUT ...]
inputs JSON: {"ids": [[...], ...] (B,T), "targets": [[...]] (B,T), "mask": [[0/1]] (B,T), "value_coef": 0.5}
loss = masked mean cross-entropy of targets + value_coef * masked mean of values^2 (when a value head exists).
"""
import json
import math
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        buf = raw[8 + n + a : 8 + n + b]
        if e["dtype"] == "BF16":
            arr = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(buf, dtype=np.dtype(DTYPES[e["dtype"]]).newbyteorder("<")).astype(np.float32)
        out[name] = arr.reshape(e["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        a = np.ascontiguousarray(t.detach().cpu().numpy().astype("<f4"))
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * ((8 - (len(h) + 8) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Linear:
    """y = x W^T + b, plus a LoRA delta (dropout off) scaled by alpha / r when adapters are given."""

    def __init__(self, p, name, lora=None):
        self.w = p[name + ".weight"]
        self.b = p.get(name + ".bias")
        self.lora = lora

    def __call__(self, x):
        y = x @ self.w.T
        if self.b is not None:
            y = y + self.b
        if self.lora is not None:
            a, b, scale = self.lora
            y = y + (x @ a.T) @ b.T * scale
        return y


def forward(cfg, p, lora, ids):
    B, T = ids.shape
    C, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or C // H
    eps, theta = cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0)
    qk_norm = cfg["model_type"] == "qwen3"
    dtype = p["model.embed_tokens.weight"].dtype
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    causal = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)

    def lin(name):
        key = "base_model.model." + name
        ab = None
        if key + ".lora_A.weight" in lora:
            ab = (lora[key + ".lora_A.weight"], lora[key + ".lora_B.weight"], lora["__scale__"])
        return Linear(p, name, ab)

    h = p["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        x = rms_norm(h, p[pre + "input_layernorm.weight"], eps)
        q = lin(pre + "self_attn.q_proj")(x).view(B, T, H, D)
        k = lin(pre + "self_attn.k_proj")(x).view(B, T, K, D)
        v = lin(pre + "self_attn.v_proj")(x).view(B, T, K, D).transpose(1, 2)
        if qk_norm:
            q = rms_norm(q, p[pre + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, p[pre + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // K, dim=1)
        v = v.repeat_interleave(H // K, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D) + causal
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)
        h = h + lin(pre + "self_attn.o_proj")(y)
        x = rms_norm(h, p[pre + "post_attention_layernorm.weight"], eps)
        gate, up = lin(pre + "mlp.gate_proj")(x), lin(pre + "mlp.up_proj")(x)
        h = h + lin(pre + "mlp.down_proj")(torch.nn.functional.silu(gate) * up)
    h = rms_norm(h, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else p["lm_head.weight"]
    logits = h @ head.T
    values = None
    if "value_head.weight" in p:
        values = (h @ p["value_head.weight"].T + p["value_head.bias"]).squeeze(-1)
    return logits, values


def run(ckpt, inputs_path, out_path, dtype):
    cfg = json.load(open(f"{ckpt}/config.json"))
    inputs = json.load(open(inputs_path))
    params = {k: torch.tensor(v, dtype=dtype) for k, v in read_safetensors(f"{ckpt}/model.safetensors").items()}
    try:
        params.update({k: torch.tensor(v, dtype=dtype) for k, v in read_safetensors(f"{ckpt}/value_head.safetensors").items()})
    except FileNotFoundError:
        pass
    lora = {}
    try:
        acfg = json.load(open(f"{ckpt}/adapter/adapter_config.json"))
        lora = {k: torch.tensor(v, dtype=dtype) for k, v in read_safetensors(f"{ckpt}/adapter/adapter_model.safetensors").items()}
        lora["__scale__"] = acfg["lora_alpha"] / acfg["r"]
    except FileNotFoundError:
        pass
    trainable = {k: v for k, v in lora.items() if k != "__scale__"} if lora else params
    if lora and "value_head.weight" in params:
        trainable = {**trainable, "value_head.weight": params["value_head.weight"], "value_head.bias": params["value_head.bias"]}
    for t in trainable.values():
        t.requires_grad_(True)

    ids = torch.tensor(inputs["ids"], dtype=torch.long)
    targets = torch.tensor(inputs["targets"], dtype=torch.long)
    mask = torch.tensor(inputs["mask"], dtype=dtype)
    logits, values = forward(cfg, params, lora, ids)
    nll = -logits.log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)
    loss = (nll * mask).sum() / mask.sum()
    if values is not None:
        loss = loss + inputs.get("value_coef", 0.5) * (values.pow(2) * mask).sum() / mask.sum()
    loss.backward()
    out = {"logits": logits, "loss": loss.reshape(1)}
    if values is not None:
        out["values"] = values
    for k, t in trainable.items():
        out["grad." + k] = t.grad
    write_safetensors(out_path, out)


def main(argv):
    dtype = torch.float64
    if "--dtype" in argv:
        i = argv.index("--dtype")
        dtype = {"float64": torch.float64, "float32": torch.float32}[argv[i + 1]]
        argv = argv[:i] + argv[i + 2 :]
    if len(argv) == 0 or len(argv) % 3 != 0:
        sys.exit(__doc__)
    for j in range(0, len(argv), 3):
        run(argv[j], argv[j + 1], argv[j + 2], dtype)


if __name__ == "__main__":
    main(sys.argv[1:])
