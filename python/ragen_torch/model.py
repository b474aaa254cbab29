"""The Llama / Qwen2 / Qwen3 decoder in plain PyTorch (RMSNorm, RoPE, GQA, SwiGLU, q/k/v bias, q/k norm, tied or
untied head), with PEFT-layout LoRA on its linear layers and a KV cache for sampling. Parameter names are Hugging
Face's, so `state_dict()` keys are the checkpoint's keys. Mirrors src/model/transformer.ts.
"""

import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from .safetensors_io import CheckpointError, load_weights, read_safetensors

MODEL_TYPES = ("qwen2", "qwen3", "llama")
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


class ModelConfig:
    """The fields of a Hugging Face config.json we use, with the conventions of src/model/config.ts."""

    def __init__(self, raw, source="config.json"):
        self.raw = raw
        t = raw.get("model_type")
        if t not in MODEL_TYPES:
            raise CheckpointError(
                f"{source}: model_type `{t}` (architectures {raw.get('architectures')}) is not supported by the torch engine's "
                f"built-in decoder; supported: {', '.join(MODEL_TYPES)}"
            )
        if raw.get("hidden_act", "silu") != "silu":
            raise CheckpointError(
                f"{source}: hidden_act `{raw.get('hidden_act')}` is not supported (only silu / SwiGLU)"
            )
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        if rope.get("rope_type", rope.get("type", "default")) != "default":
            raise CheckpointError(f"{source}: RoPE scaling {json.dumps(rope)} is not supported, only plain RoPE")
        if raw.get("use_sliding_window"):
            raise CheckpointError(f"{source}: use_sliding_window: true is not supported")
        for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
            if not isinstance(raw.get(key), int):
                raise CheckpointError(f"{source}: missing or non-integer `{key}` (got {raw.get(key)!r})")
        self.model_type = t
        self.V, self.C, self.F = raw["vocab_size"], raw["hidden_size"], raw["intermediate_size"]
        self.n_layers, self.H = raw["num_hidden_layers"], raw["num_attention_heads"]
        self.K = raw.get("num_key_value_heads") or self.H
        self.D = raw.get("head_dim") or self.C // self.H
        self.eps = raw.get("rms_norm_eps", 1e-6)
        self.theta = rope.get("rope_theta") or raw.get("rope_theta", 10000.0)
        self.tied = bool(raw.get("tie_word_embeddings", False))
        bias = bool(raw.get("attention_bias", False))
        self.qkv_bias = True if t == "qwen2" else bias
        self.o_bias = False if t == "qwen2" else bias
        self.qk_norm = t == "qwen3"
        if self.H % self.K != 0:
            raise CheckpointError(
                f"{source}: num_attention_heads ({self.H}) must be a multiple of num_key_value_heads ({self.K})"
            )

    @staticmethod
    def load(directory):
        path = os.path.join(directory, "config.json")
        if not os.path.exists(path):
            raise CheckpointError(
                f"not a model checkpoint: {path} is missing (a Hugging Face model directory has config.json + *.safetensors)"
            )
        with open(path) as f:
            return ModelConfig(json.load(f), path)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Linear(nn.Module):
    """y = x W^T + b, plus LoRA's (alpha / r) B A dropout(x) when adapters are attached and enabled."""

    def __init__(self, n_in, n_out, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in))
        self.bias = nn.Parameter(torch.zeros(n_out)) if bias else None
        self.lora_A = self.lora_B = None
        self.scaling, self.dropout, self.lora_on = 0.0, 0.0, True

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.lora_A is not None and self.lora_on:
            xin = F.dropout(x, self.dropout, self.training) if self.dropout > 0 else x
            y = y + F.linear(F.linear(xin, self.lora_A), self.lora_B) * self.scaling
        return y


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_tables(positions, D, theta, dtype):
    """cos, sin of shape (B, 1, T, D) for integer positions (B, T)."""
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64, device=positions.device) / D))
    ang = positions.to(torch.float64)[..., None] * inv
    emb = torch.cat((ang, ang), dim=-1)[:, None]
    return emb.cos().to(dtype), emb.sin().to(dtype)


def attention(q, k, v, mask):
    """q (B, H, T, D), k and v (B, H, S, D), mask (B, 1, T, S) bool (True = attend)."""
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    att = att.masked_fill(~mask, float("-inf"))
    return att.softmax(-1) @ v


def repeat_kv(x, g):
    """(B, K, S, D) -> (B, K*g, S, D), each head repeated g times in a row: repeat_interleave's result through
    expand + reshape, which never syncs with the host (so a CUDA graph can capture it)."""
    B, K, S, D = x.shape
    return x[:, :, None].expand(B, K, g, S, D).reshape(B, K * g, S, D)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.q_proj = Linear(c.C, c.H * c.D, c.qkv_bias)
        self.k_proj = Linear(c.C, c.K * c.D, c.qkv_bias)
        self.v_proj = Linear(c.C, c.K * c.D, c.qkv_bias)
        self.o_proj = Linear(c.H * c.D, c.C, c.o_bias)
        if c.qk_norm:
            self.q_norm = RMSNorm(c.D, c.eps)
            self.k_norm = RMSNorm(c.D, c.eps)

    def forward(self, x, cos, sin, mask, cache=None, start=0):
        c = self.c
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, c.H, c.D)
        k = self.k_proj(x).view(B, T, c.K, c.D)
        v = self.v_proj(x).view(B, T, c.K, c.D).transpose(1, 2)
        if c.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)  # (B, H or K, T, D)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None and torch.is_tensor(
            start
        ):  # static decode (decode.py): write at a tensor index, attend over
            cache[0].index_copy_(
                2, start, k.to(cache[0].dtype)
            )  # the mask's span of the cache (a bucket past the written
            cache[1].index_copy_(2, start, v.to(cache[1].dtype))  # keys); the mask hides what is not written yet
            k, v = cache[0][:, :, : mask.shape[-1]], cache[1][:, :, : mask.shape[-1]]
        elif cache is not None:  # (keys, values) of (B, K, capacity, D): write this step, attend over all so far
            cache[0][:, :, start : start + T] = k
            cache[1][:, :, start : start + T] = v
            k, v = cache[0][:, :, : start + T], cache[1][:, :, : start + T]
        if c.H != c.K:  # grouped-query attention: kv head j serves query heads j*g .. (j+1)*g - 1
            k, v = repeat_kv(k, c.H // c.K), repeat_kv(v, c.H // c.K)
        y = attention(q, k, v, mask).transpose(1, 2).reshape(B, T, c.H * c.D)
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = Linear(c.C, c.F, False)
        self.up_proj = Linear(c.C, c.F, False)
        self.down_proj = Linear(c.F, c.C, False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.C, c.eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.C, c.eps)
        self.mlp = MLP(c)

    def forward(self, h, cos, sin, mask, cache=None, start=0):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, mask, cache, start)
        return h + self.mlp(self.post_attention_layernorm(h))


class Trunk(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.V, c.C)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.C, c.eps)


class Decoder(nn.Module):
    """The causal LM: `model.*` trunk and (untied) `lm_head`. `hidden` returns final normed states (B, T, C)."""

    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Trunk(c)
        self.lm_head = None if c.tied else Linear(c.C, c.V, False)
        self.lora = None  # {"r", "alpha", "dropout", "target_modules"} once adapters are attached
        self.checkpointing = False  # recompute each layer in backward instead of keeping its activations
        self.compiled = None  # torch.compile'd layers for passes without a KV cache (compiled.py), or None: eager
        self.base_dir = None  # the directory its base weights were read from (load_decoder), or None: built in memory

    def forward(self, ids, with_logits=False, positions=None, segments=None):
        """Hidden states (and logits) through the module call, so FSDP's hooks (fsdp.py) gather the weights around it."""
        h = self.hidden(ids, positions, segments=segments)
        return (h, self.logits(h)) if with_logits else h

    def head_weight(self):
        return self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    def rope(self, positions, dtype):
        """cos, sin (B, 1, T, D) of the positions (the VL model's are 3-D: vision.py)."""
        return rope_tables(positions, self.config.D, self.config.theta, dtype)

    def hidden(self, ids, positions=None, key_valid=None, cache=None, start=0, segments=None, embeds=None, inject=None):
        """ids (B, T); positions (B, T) (default start..); key_valid (B, S) bool over cached + new keys (padding);
        segments (B, T): which packed row each token belongs to (packing.py), attention staying inside it (no cache);
        embeds (B, T, C): the input embeddings when not the ids' (the VL model's image features); inject: {layer i:
        (mask (B, T), x (n, C))} added to layer i's output at the mask (Qwen3-VL's DeepStack, vision.py)."""
        B, T = ids.shape
        dev = ids.device
        if positions is None:
            positions = torch.arange(start, start + T, device=dev).expand(B, T)
        h = self.model.embed_tokens(ids) if embeds is None else embeds
        cos, sin = self.rope(positions, h.dtype)
        S = start + T
        q_pos = torch.arange(start, S, device=dev)
        mask = (torch.arange(S, device=dev)[None, :] <= q_pos[:, None])[None, None]  # (1, 1, T, S) causal
        if key_valid is not None:
            # Hidden keys (left padding); a query always sees itself, so padded rows stay finite.
            own = torch.arange(S, device=dev)[None, :] == q_pos[:, None]
            mask = mask & (key_valid[:, None, None, :S] | own[None, None])
        elif segments is not None:  # packed rows: a block-diagonal causal mask (a bin's padding tail is one more block)
            mask = mask & (segments[:, None, :, None] == segments[:, None, None, :])
        else:
            mask = mask.expand(B, 1, T, S)
        recompute = self.checkpointing and cache is None and torch.is_grad_enabled()
        layers = self.compiled if self.compiled is not None and cache is None else self.model.layers
        for i, layer in enumerate(layers):
            if recompute:  # the RNG state is restored for the recomputation, so LoRA dropout masks repeat
                h = torch.utils.checkpoint.checkpoint(layer, h, cos, sin, mask, use_reentrant=False)
            else:
                h = layer(h, cos, sin, mask, None if cache is None else cache[i], start)
            if inject and i in inject:
                at, x = inject[i]
                h = h.masked_scatter(at[..., None], h[at] + x.to(h.dtype))
        return self.model.norm(h)

    def logits(self, hidden):
        return F.linear(hidden, self.head_weight())

    def base_state(self):
        """Base weights by HF name (no adapters; the tied head has no entry)."""
        return {k: v for k, v in self.state_dict().items() if ".lora_" not in k}

    def linears(self):
        """(HF module path, Linear) of every decoder-layer projection, in PEFT's order (layers, then modules)."""
        out = []
        for i, layer in enumerate(self.model.layers):
            for m in LINEAR_MODULES:
                parent = layer.mlp if m in ("gate_proj", "up_proj", "down_proj") else layer.self_attn
                sub = "mlp" if parent is layer.mlp else "self_attn"
                out.append((f"model.layers.{i}.{sub}.{m}", m, getattr(parent, m)))
        return out

    def set_adapters(self, enabled):
        for _, _, lin in self.linears():
            lin.lora_on = enabled

    def attach_lora(self, r, alpha, dropout, targets, generator, adapters=None):
        """PEFT LoRA on `targets`: A uniform in +-1/sqrt(in) (kaiming_uniform(a=sqrt(5))), B zero; or `adapters` by PEFT key."""
        self.lora = {"r": r, "alpha": alpha, "dropout": dropout, "target_modules": list(targets)}
        for p in self.parameters():
            p.requires_grad_(False)
        for path, m, lin in self.linears():
            if m not in targets:
                continue
            n_out, n_in = lin.weight.shape
            dev = lin.weight.device
            if adapters is not None:
                a = expect(adapters, peft_key(path, "A"), (r, n_in), "adapter_model.safetensors")
                b = expect(adapters, peft_key(path, "B"), (n_out, r), "adapter_model.safetensors")
            else:
                bound = 1.0 / math.sqrt(n_in)
                a = (torch.rand(r, n_in, generator=generator) * 2 - 1) * bound
                b = torch.zeros(n_out, r)
            lin.lora_A = nn.Parameter(a.to(dev, torch.float32))
            lin.lora_B = nn.Parameter(b.to(dev, torch.float32))
            lin.scaling, lin.dropout = alpha / r, dropout

    def trainable(self):
        """(name, parameter) that train: the adapters under their PEFT keys when LoRA is on, else every base weight."""
        if self.lora is not None:
            out = []
            for path, _, lin in self.linears():
                if lin.lora_A is not None:
                    out += [(peft_key(path, "A"), lin.lora_A), (peft_key(path, "B"), lin.lora_B)]
            return out
        return [(k, p) for k, p in self.named_parameters() if p.requires_grad]


def peft_key(module, which):
    return f"base_model.model.{module}.lora_{which}.weight"


def modules_with_adapters(adapters, source, pattern):
    """The projections an adapter file holds tensors for (its target_modules is a regex, `pattern`)."""
    found = [m for m in LINEAR_MODULES if any(k.endswith(f".{m}.lora_A.weight") for k in adapters)]
    if not found:
        raise CheckpointError(
            f"{source}: target_modules {pattern!r} is a pattern, and the adapter file holds no lora_A tensor of a"
            f" decoder projection ({', '.join(LINEAR_MODULES)}); it is not a LoRA adapter of this model."
        )
    return found


def expect(weights, name, shape, source):
    t = weights.get(name)
    if t is None:
        raise CheckpointError(f"{source}: tensor `{name}` is missing")
    if tuple(t.shape) != tuple(shape):
        raise CheckpointError(f"{source}: tensor `{name}` has shape {list(t.shape)}, expected {list(shape)}")
    return t.to(torch.float32)


def config_from_raw(raw, source="config.json"):
    """The ModelConfig of a config.json's contents: a text decoder's, or a vision-language model's (vision.py)."""
    from .vision import is_vision_config, vl_config

    return vl_config(raw, source) if is_vision_config(raw) else ModelConfig(raw, source)


def load_config(directory):
    """The ModelConfig of a checkpoint directory."""
    path = os.path.join(directory, "config.json")
    if not os.path.exists(path):
        return ModelConfig.load(directory)  # its error names what a checkpoint directory holds
    with open(path) as f:
        return config_from_raw(json.load(f), path)


def make_decoder(c):
    """The model of a config: a Decoder, or a VLDecoder (vision.py) for a vision-language config."""
    if getattr(c, "vision", None) is None:
        return Decoder(c)
    from .vision import VLDecoder

    return VLDecoder(c)


def weights_dir(directory):
    """The directory holding `directory`'s base weights, as src/model/checkpoint.ts's weightsDir: `directory` itself when
    it has model.safetensors (or a sharded index), else the base its adapter names (adapter/adapter_config.json's
    base_model_name_or_path, relative to adapter/ or absolute: a LoRA checkpoint of the local engine), followed until
    a directory with weights."""
    at, seen = os.path.abspath(directory), set()
    while not any(os.path.exists(os.path.join(at, f)) for f in ("model.safetensors", "model.safetensors.index.json")):
        cfg = os.path.join(at, "adapter", "adapter_config.json")
        if not os.path.exists(cfg):
            return at  # load_weights says which files are missing
        seen.add(at)
        try:
            with open(cfg) as f:
                named = json.load(f).get("base_model_name_or_path")
        except ValueError as e:
            raise CheckpointError(f"{cfg} is not valid JSON ({e}); the checkpoint is damaged.") from e
        nxt = os.path.abspath(os.path.join(at, "adapter", named)) if isinstance(named, str) and named else None
        if nxt is None or nxt in seen:
            raise CheckpointError(
                f"{at} has no weights (model.safetensors or model.safetensors.index.json) and its adapter names no other"
                f" base ({cfg}: base_model_name_or_path {named!r}); set base_model_name_or_path to the directory of the"
                " base model the adapter was trained on."
            )
        if not os.path.exists(os.path.join(nxt, "config.json")):
            raise CheckpointError(
                f"{at} holds LoRA adapters over the base model {named!r} ({cfg}: base_model_name_or_path), and {nxt} is"
                " not a model directory (no config.json): put the base model back there, or set base_model_name_or_path"
                " to where it is now."
            )
        at = nxt
    return at


def load_decoder(directory, device, adapters=True, generator=None):
    """A Decoder (or VLDecoder) from a HF directory (float32 master weights), with its PEFT adapter under adapter/ when
    present; an adapter-only directory reads its base from the directory the adapter names (weights_dir). A vision
    tower loads frozen (VLDecoder.set_vision_train)."""
    c = load_config(directory)
    with torch.device("meta") if hasattr(torch.device, "__enter__") else _nullctx():  # torch >= 2.0: no allocation
        model = make_decoder(c)
    base = weights_dir(directory)
    weights = load_weights(base)
    if getattr(c, "vision", None) is not None:
        from .vision import hub_names

        weights = hub_names(weights)
    state = {}
    for name, p in model.state_dict(keep_vars=True).items():
        state[name] = expect(weights, name, p.shape, directory)
    if _has_assign():
        model.load_state_dict(state, assign=True)
    else:
        _assign(model, state)
    model = model.to(device).requires_grad_(True)  # assign=True may carry the loaded tensors' requires_grad=False
    model.base_dir = base
    if getattr(c, "vision", None) is not None:
        model.set_vision_train(False)
    adir = os.path.join(directory, "adapter")
    if adapters and os.path.exists(os.path.join(adir, "adapter_config.json")):
        with open(os.path.join(adir, "adapter_config.json")) as f:
            acfg = json.load(f)
        if acfg.get("peft_type", "LORA") != "LORA" or acfg.get("use_dora") or acfg.get("use_rslora"):
            raise CheckpointError(f"{adir}: only plain LoRA adapters are supported (peft_type {acfg.get('peft_type')})")
        source = os.path.join(adir, "adapter_model.safetensors")
        ad, _ = read_safetensors(source)
        if getattr(c, "vision", None) is not None:
            from .vision import adapter_names_in_memory

            ad = adapter_names_in_memory(ad, source)
        targets = acfg.get("target_modules") or "all-linear"
        if targets == "all-linear" or (not isinstance(targets, str) and "all-linear" in targets):
            targets = LINEAR_MODULES
        elif isinstance(targets, str):  # a regex (PEFT's form): the modules the file holds adapters for
            targets = modules_with_adapters(ad, os.path.join(adir, "adapter_config.json"), targets)
        model.attach_lora(
            int(acfg["r"]), float(acfg["lora_alpha"]), float(acfg.get("lora_dropout") or 0), targets, generator, ad
        )
    return model


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _has_assign():
    import inspect

    return "assign" in inspect.signature(nn.Module.load_state_dict).parameters


def _assign(model, state):
    """load_state_dict(assign=True) for torch < 2.1: replace each parameter by the loaded tensor."""
    for name, t in state.items():
        mod_name, _, leaf = name.rpartition(".")
        mod = model.get_submodule(mod_name)
        setattr(mod, leaf, nn.Parameter(t, requires_grad=True))
