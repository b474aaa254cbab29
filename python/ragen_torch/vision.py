"""Qwen2.5-VL in plain PyTorch: the vision tower (patch embedding, blocks with 2-D rotary and windowed or full
attention, the 2x2 patch merger) and the language model with multimodal rotary positions (3-D position ids split by
`mrope_section`), the image features scattered at the `<|image_pad|>` ids. Parameter names are the Hub checkpoints'
(`model.*`, `visual.*`, `lm_head`); transformers 5's `model.language_model.*` / `model.visual.*` load too.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from .model import LINEAR_MODULES, Decoder, ModelConfig, RMSNorm, attention, rotate_half
from .safetensors_io import CheckpointError

VL_MODEL_TYPES = ("qwen2_5_vl", "qwen3_vl")
TEXT_MODEL_TYPES = {"qwen2_5_vl": "qwen2", "qwen3_vl": "qwen3"}  # the language model's layers: Qwen2's or Qwen3's
PATCH_DIM_NAMES = "3 channels x temporal_patch_size x patch_size x patch_size"


def is_vision_config(raw):
    return raw.get("model_type") in VL_MODEL_TYPES


class VisionConfig:
    """The `vision_config` fields of a Qwen2.5-VL config.json."""

    def __init__(self, raw, source):
        if raw.get("hidden_act", "silu") != "silu":
            raise CheckpointError(
                f"{source}: vision_config.hidden_act `{raw.get('hidden_act')}` is not supported (silu)"
            )
        for key in ("depth", "hidden_size", "intermediate_size", "num_heads", "out_hidden_size"):
            if not isinstance(raw.get(key), int):
                raise CheckpointError(f"{source}: vision_config: missing or non-integer `{key}` (got {raw.get(key)!r})")
        self.depth, self.C, self.F = raw["depth"], raw["hidden_size"], raw["intermediate_size"]
        self.H, self.out = raw["num_heads"], raw["out_hidden_size"]
        self.D = self.C // self.H
        self.channels = raw.get("in_channels", raw.get("in_chans", 3))
        self.patch = raw.get("patch_size", raw.get("spatial_patch_size", 14))
        self.temporal = raw.get("temporal_patch_size", 2)
        self.merge = raw.get("spatial_merge_size", 2)
        self.window = raw.get("window_size", 112)
        self.full_blocks = set(raw.get("fullatt_block_indexes") or [])
        self.theta = (raw.get("rope_parameters") or {}).get("rope_theta", 10000.0)
        self.patch_dim = self.channels * self.temporal * self.patch * self.patch
        if self.window % (self.merge * self.patch) != 0:
            raise CheckpointError(
                f"{source}: vision_config.window_size {self.window} must be a multiple of spatial_merge_size x "
                f"patch_size = {self.merge * self.patch}"
            )


def vl_config(raw, source="config.json"):
    """A ModelConfig of the language model (Qwen2 layers for Qwen2.5-VL, Qwen3's for Qwen3-VL) with `vision`,
    `mrope_section`, `mrope_interleaved` and the special token ids attached; `raw` stays the whole config (what a save
    writes back)."""
    text = dict(raw.get("text_config") or {})
    flat = {k: v for k, v in raw.items() if k not in ("text_config", "vision_config")}
    text = dict(flat, **text)  # Hub configs are flat, transformers 5 nests text_config (its values win)
    rope = dict(text.get("rope_parameters") or text.get("rope_scaling") or {})
    section = rope.get("mrope_section")
    if not isinstance(section, list) or len(section) != 3:
        raise CheckpointError(
            f"{source}: rope_scaling / rope_parameters must carry mrope_section [t, h, w] (got {rope})"
        )
    theta = rope.get("rope_theta", text.get("rope_theta", 1000000.0))
    text.pop("rope_scaling", None)
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    text["model_type"] = TEXT_MODEL_TYPES[raw["model_type"]]
    text["tie_word_embeddings"] = bool(raw.get("tie_word_embeddings") or text.get("tie_word_embeddings"))
    c = ModelConfig(text, source)
    c.raw = raw
    c.model_type = raw["model_type"]
    if sum(section) * 2 != c.D:
        raise CheckpointError(f"{source}: mrope_section {section} must sum to head_dim / 2 = {c.D // 2}")
    c.mrope_section = section
    # Qwen3-VL interleaves the sections (frequency j: row if j % 3 == 1, column if j % 3 == 2, within their spans)
    c.mrope_interleaved = bool(rope.get("mrope_interleaved", raw["model_type"] == "qwen3_vl"))
    if not isinstance(raw.get("vision_config"), dict):
        raise CheckpointError(f"{source}: a {raw['model_type']} config needs a vision_config object")
    if raw["model_type"] == "qwen3_vl":
        from .vision_qwen3 import Qwen3VisionConfig

        c.vision = Qwen3VisionConfig(raw["vision_config"], source)
    else:
        c.vision = VisionConfig(raw["vision_config"], source)
    if c.vision.out != c.C:
        raise CheckpointError(
            f"{source}: vision_config.out_hidden_size {c.vision.out} must equal the language model's hidden_size {c.C}"
        )
    c.image_token_id = raw.get("image_token_id", 151655)
    c.vision_start_token_id = raw.get("vision_start_token_id", 151652)
    # Only the processor writes vision tokens: sampling and scoring leave them out (token_stats.py, generate.py), as
    # the local engine's src/model/vision-tokens.ts lists them.
    vision_ids = (
        raw.get("vision_start_token_id", 151652),
        raw.get("vision_end_token_id", 151653),
        raw.get("vision_token_id", 151654),
        raw.get("image_token_id", 151655),
        raw.get("video_token_id", 151656),
    )
    c.suppressed_ids = sorted({i for i in vision_ids if isinstance(i, int) and 0 <= i < c.V})
    return c


def window_order(grid, merge, units_per_window):
    """(order, window id): the merged units (2x2 patch groups) of each image reordered window by window (row-major
    windows, row-major inside), and each reordered unit's window, numbered across images. `grid` (n, 3) of (t, h, w)
    in patches."""
    order, wid, base, wbase = [], [], 0, 0
    for t, h, w in grid.tolist():
        lh, lw, s = h // merge, w // merge, units_per_window
        nh, nw = -(-lh // s), -(-lw // s)
        ti, r, c = torch.meshgrid(torch.arange(t), torch.arange(lh), torch.arange(lw), indexing="ij")
        win = (ti * nh + r // s) * nw + c // s
        key = win * s * s + (r % s) * s + c % s
        perm = key.flatten().argsort()
        order.append(perm + base)
        wid.append(win.flatten()[perm] + wbase)
        base += t * lh * lw
        wbase += t * nh * nw
    return torch.cat(order), torch.cat(wid)


class VisionBlock(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.v = v
        self.norm1 = RMSNorm(v.C, 1e-6)
        self.norm2 = RMSNorm(v.C, 1e-6)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(v.C, 3 * v.C)
        self.attn.proj = nn.Linear(v.C, v.C)
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(v.C, v.F)
        self.mlp.up_proj = nn.Linear(v.C, v.F)
        self.mlp.down_proj = nn.Linear(v.F, v.C)

    def forward(self, x, cos, sin, mask):
        """x (N, C) the patches of every image; cos, sin (N, D); mask (N, N) bool: which patches attend together."""
        N, v = x.shape[0], self.v
        q, k, val = self.attn.qkv(self.norm1(x)).view(N, 3, v.H, v.D).unbind(1)  # each (N, H, D)
        q = (q.float() * cos[:, None] + rotate_half(q.float()) * sin[:, None]).to(x.dtype)
        k = (k.float() * cos[:, None] + rotate_half(k.float()) * sin[:, None]).to(x.dtype)
        y = attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], val.transpose(0, 1)[None], mask[None, None])
        x = x + self.attn.proj(y[0].transpose(0, 1).reshape(N, v.C))
        m = self.mlp
        h = self.norm2(x)
        return x + m.down_proj(F.silu(m.gate_proj(h)) * m.up_proj(h))


class VisionTower(nn.Module):
    """pixel values (N, 3*2*14*14) as Qwen's processor flattens them, grid (n, 3) -> features (N / 4, out) in the
    processor's patch order (each 2x2 merge group consecutive), the `<|image_pad|>` embeddings."""

    def __init__(self, v):
        super().__init__()
        self.v = v
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Module()  # a Conv3d over (temporal, patch, patch) with its stride: one linear map
        self.patch_embed.proj.weight = nn.Parameter(torch.empty(v.C, v.channels, v.temporal, v.patch, v.patch))
        self.blocks = nn.ModuleList(VisionBlock(v) for _ in range(v.depth))
        self.merger = nn.Module()
        self.merger.ln_q = RMSNorm(v.C, 1e-6)
        C4 = v.C * v.merge * v.merge
        self.merger.mlp = nn.Sequential(nn.Linear(C4, C4), nn.GELU(), nn.Linear(C4, v.out))

    def rotary(self, grid):
        """cos, sin (N, D) of each patch's (row, column) in the processor's order, float32."""
        v, m = self.v, self.v.merge
        rows = []
        for t, h, w in grid.tolist():
            r, c = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            shape = (h // m, m, w // m, m)
            rc = torch.stack(
                [r.reshape(shape).transpose(1, 2).flatten(), c.reshape(shape).transpose(1, 2).flatten()], -1
            )
            rows.append(rc.repeat(t, 1))
        pos = torch.cat(rows).to(self.patch_embed.proj.weight.device)  # (N, 2)
        half = v.D // 2
        inv = 1.0 / (v.theta ** (torch.arange(0, half, 2, dtype=torch.float, device=pos.device) / half))
        ang = (pos[..., None].float() * inv).flatten(1)  # (N, D/2): rows' angles, then columns'
        emb = torch.cat((ang, ang), -1)
        return emb.cos(), emb.sin()

    def forward(self, pixels, grid):
        v, unit = self.v, self.v.merge * self.v.merge
        N = pixels.shape[0]
        if pixels.dim() != 2 or pixels.shape[1] != v.patch_dim:
            raise ValueError(
                f"pixel values must be (patches, {v.patch_dim}) ({PATCH_DIM_NAMES}), got {list(pixels.shape)}"
            )
        if int(grid.prod(-1).sum()) != N:
            raise ValueError(f"image grids {grid.tolist()} hold {int(grid.prod(-1).sum())} patches, pixel values {N}")
        w = self.patch_embed.proj.weight
        x = F.linear(pixels.to(w.dtype), w.reshape(v.C, -1))  # (N, C)
        cos, sin = self.rotary(grid)
        order, win = window_order(grid, v.merge, v.window // v.merge // v.patch)
        order, win = order.to(x.device), win.to(x.device)
        idx = (order[:, None] * unit + torch.arange(unit, device=x.device)).flatten()  # units -> their patches
        x, cos, sin = x[idx], cos[idx], sin[idx]
        frame = torch.arange(int(grid[:, 0].sum()), device=x.device).repeat_interleave(
            (grid[:, 1] * grid[:, 2]).repeat_interleave(grid[:, 0]).to(x.device)
        )[idx]  # full attention stays inside one image (one frame of a video)
        win = win.repeat_interleave(unit)
        window_mask = win[:, None] == win[None, :]
        full_mask = frame[:, None] == frame[None, :]
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, full_mask if i in v.full_blocks else window_mask)
        y = self.merger.mlp(self.merger.ln_q(x).view(-1, unit * v.C))  # (N / 4, out) in window order
        return y[order.argsort()]


def rope_index(ids, grids, c):
    """3-D position ids (3, T) of one row: text counts on in all three; an image's `<|image_pad|>` run takes
    (start, start + row, start + column) of its merged grid, and the text after it starts at start + max(h, w) / 2.
    `grids`: the row's images' (t, h, w) in order. Returns (positions, images used)."""
    m = c.vision.merge
    T = ids.shape[0]
    pos = torch.empty(3, T, dtype=torch.long)
    is_pad = (ids == c.image_token_id).tolist()
    i, cur, k = 0, 0, 0
    while i < T:
        if not is_pad[i]:
            pos[:, i] = cur
            i, cur = i + 1, cur + 1
            continue
        if k >= len(grids):
            raise ValueError(f"more <|image_pad|> runs than images ({len(grids)}) at token {i}")
        t, h, w = (int(x) for x in grids[k])
        lh, lw = h // m, w // m
        n = min(t * lh * lw, T - i)  # a row cut inside its last image keeps the positions of the part it holds
        tt, rr, cc = torch.meshgrid(torch.arange(t), torch.arange(lh), torch.arange(lw), indexing="ij")
        pos[:, i : i + n] = torch.stack([tt.flatten(), rr.flatten(), cc.flatten()])[:, :n] + cur
        i, cur, k = i + n, cur + max(lh, lw), k + 1
    return pos, k


def mrope_axes(section, interleaved):
    """Which position (0 temporal, 1 row, 2 column) each of the D/2 rotary frequencies takes: `mrope_section`'s
    consecutive spans (Qwen2.5-VL), or interleaved t, h, w, t, h, w, ... while the row and column spans last (Qwen3-VL)."""
    if not interleaved:
        return torch.repeat_interleave(torch.arange(3), torch.tensor(section))
    which = torch.zeros(sum(section), dtype=torch.long)
    for axis in (1, 2):
        which[axis : 3 * section[axis] : 3] = axis
    return which


def mrope_tables(positions, D, theta, section, dtype, interleaved=False):
    """cos, sin (B, 1, T, D) for 3-D positions (3, B, T): frequency j takes the temporal, row or column position
    as mrope_axes says."""
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64, device=positions.device) / D))
    ang = positions.to(torch.float64)[..., None] * inv  # (3, B, T, D/2)
    which = mrope_axes(section, interleaved).to(positions.device)
    ang = ang.gather(0, which.view(1, 1, 1, -1).expand(1, *ang.shape[1:]))[0]  # (B, T, D/2)
    emb = torch.cat((ang, ang), dim=-1)[:, None]
    return emb.cos().to(dtype), emb.sin().to(dtype)


class VLDecoder(Decoder):
    """Qwen2_5_VLForConditionalGeneration: the Decoder's `model.*` language model and `lm_head`, plus `visual.*`.
    `vision_train`: whether the tower's weights train (else frozen: no gradients, not in `trainable()`)."""

    def __init__(self, c):
        super().__init__(c)
        if c.model_type == "qwen3_vl":
            from .vision_qwen3 import Qwen3VisionTower

            self.visual = Qwen3VisionTower(c.vision)
        else:
            self.visual = VisionTower(c.vision)
        self.vision_train = False

    def rope(self, positions, dtype):
        if positions.dim() == 2:  # text only: the three rows agree, which is plain RoPE
            positions = positions[None].expand(3, *positions.shape)
        c = self.config
        return mrope_tables(positions, c.D, c.theta, c.mrope_section, dtype, c.mrope_interleaved)

    def forward(self, ids, with_logits=False, positions=None, segments=None, images=None):
        """`images`: per row None or (pixel values (N, patch_dim), grid (n, 3)) of its images in order of appearance."""
        embeds, inject = None, None
        if images is not None and any(im is not None for im in images):
            if segments is not None:
                raise ValueError(
                    "packed rows (model.torch.packing) do not carry images yet: set model.torch.packing false for a "
                    "vision-language model"
                )
            embeds, positions, inject = self.multimodal_inputs(ids, images)
        h = self.hidden(ids, positions, segments=segments, embeds=embeds, inject=inject)
        return (h, self.logits(h)) if with_logits else h

    def multimodal_inputs(self, ids, images, pads=None):
        """(embeddings (B, T, C) with the image features at the pad ids, 3-D positions (3, B, T), {layer: (pad mask,
        features)} added after those layers (Qwen3-VL's DeepStack; else empty)); `pads` (B,): left padding of each row
        (generate), whose positions are 0 and whose tokens count as no part of the row."""
        c = self.config
        B, T = ids.shape
        pix = [im[0] for im in images if im is not None]
        grids = [im[1].reshape(-1, 3).long().cpu() for im in images if im is not None]
        feats = self.visual(torch.cat(pix).to(ids.device), torch.cat(grids))  # (sum of pads, C)
        feats, deep = feats if isinstance(feats, tuple) else (feats, [])
        h = self.model.embed_tokens(ids)
        pad = ids == c.image_token_id
        positions = torch.empty(3, B, T, dtype=torch.long)
        for b in range(B):
            g = (
                images[b][1].reshape(-1, 3).long().cpu()
                if images[b] is not None
                else torch.zeros(0, 3, dtype=torch.long)
            )
            n_feat = int((g.prod(-1) // (c.vision.merge**2)).sum())
            n_pad = int(pad[b].sum())
            if n_pad != n_feat:
                raise ValueError(
                    f"row {b} holds {n_pad} <|image_pad|> tokens (id {c.image_token_id}) but its {len(g)} image(s) of "
                    f"grids {g.tolist()} make {n_feat} features: the prompt must widen each image's placeholder to "
                    "(h / 28) x (w / 28) pads of the resized image (src/tokenizer/vision.ts)"
                )
            p0 = 0 if pads is None else int(pads[b])
            positions[:, b, :p0] = 0
            positions[:, b, p0:], _ = rope_index(ids[b, p0:].cpu(), g, c)
        h = h.masked_scatter(pad[..., None], feats.to(h.dtype))
        return h, positions.to(ids.device), {i: (pad, d) for i, d in enumerate(deep)}

    def trainable(self):
        out = super().trainable()
        if self.lora is None:
            return out if self.vision_train else [(k, p) for k, p in out if not k.startswith("visual.")]
        return out + ([(k, p) for k, p in self.visual.named_parameters(prefix="visual")] if self.vision_train else [])

    def base_state(self):
        """Base weights by the names the family publishes: the Hub's `model.*` / `visual.*` for Qwen2.5-VL,
        `model.language_model.*` / `model.visual.*` for Qwen3-VL (transformers loads both)."""
        state = super().base_state()
        if self.config.model_type != "qwen3_vl":
            return state
        return {
            (
                k.replace("model.", "model.language_model.", 1)
                if k.startswith("model.")
                else "model." + k
                if k.startswith("visual.")
                else k
            ): v
            for k, v in state.items()
        }

    def set_vision_train(self, train):
        self.vision_train = bool(train)
        self.visual.requires_grad_(self.vision_train)


def hub_names(weights):
    """transformers 5's `model.language_model.*` / `model.visual.*` keys renamed to the Hub's `model.*` / `visual.*`."""
    out = {}
    for k, t in weights.items():
        if k.startswith("model.language_model."):
            k = "model." + k[len("model.language_model.") :]
        elif k.startswith("model.visual."):
            k = k[len("model.") :]
        out[k] = t
    return out


# A VL model's adapter keys: PEFT wraps transformers' model, whose language model (>= 4.52) is model.language_model, and
# saves (with transformers 5, loads only) those names; in memory, as in the Hub layout, the layers are model.layers.
ADAPTER_LAYERS = "base_model.model.model.layers."
PEFT_ADAPTER_LAYERS = "base_model.model.model.language_model.layers."


def adapter_names_for_peft(adapters):
    """The adapters (by key in memory) under the names PEFT writes for a Qwen2.5-VL or Qwen3-VL."""
    return {
        PEFT_ADAPTER_LAYERS + k[len(ADAPTER_LAYERS) :] if k.startswith(ADAPTER_LAYERS) else k: v
        for k, v in adapters.items()
    }


def adapter_names_in_memory(adapters, source):
    """A VL adapter file's tensors under the names in memory, from PEFT's naming or the Hub layout's (our saves
    before it). Refuses adapters on the vision tower (PEFT adds them when target_modules lists gate_proj / up_proj /
    down_proj, Qwen2.5-VL's vision MLPs' names too): neither engine adapts the tower."""
    tower = [k for k in adapters if k.startswith("base_model.model.") and ".visual." in k]
    if tower:
        more = f", ... {len(tower)} in all" if len(tower) > 2 else ""
        raise CheckpointError(
            f"{source} holds LoRA adapters on the vision tower ({', '.join(tower[:2])}{more}), which neither engine"
            " applies (LoRA adapts the language model; model.vision.train trains the tower whole). Train the adapter"
            " with target_modules restricted to the language model, as our saves write it: "
            + language_model_pattern(LINEAR_MODULES)
        )
    return {
        ADAPTER_LAYERS + k[len(PEFT_ADAPTER_LAYERS) :] if k.startswith(PEFT_ADAPTER_LAYERS) else k: v
        for k, v in adapters.items()
    }


def language_model_pattern(modules):
    """PEFT's target_modules (a regex it matches whole) for `modules` of a VL model's language model: a list of names
    would also adapt Qwen2.5-VL's vision MLPs, which our file has no tensors for (PEFT: missing keys)."""
    return r"model\.language_model\.layers\.\d+\.(self_attn|mlp)\.(" + "|".join(modules) + ")"


def images_from_buffers(bufs, rows, model):
    """Each row's images of a request, or None when it carries none: buffers `rowImages` i32 (rows,) (how many images
    each row holds, in row order), `imageGrids` i32 (images, 3) ((t, h, w) in patches per image, in order) and
    `pixelValues` f32 (patches, 3*2*14*14) (every image's patches in order, each row-major as Qwen2VLImageProcessor
    flattens it). Returns [None or (pixel values, grids)] per row."""
    counts = bufs.get("rowImages")
    if counts is None:
        return None
    if getattr(model.config, "vision", None) is None:
        raise ValueError(
            f"the request carries images, but the model (model_type `{model.config.model_type}`) is text-only: load a "
            "vision-language checkpoint (model_type qwen2_5_vl) or send the rows without images"
        )
    counts = counts.reshape(-1).tolist()
    grids = bufs["imageGrids"].reshape(-1, 3).long()
    pixels = bufs["pixelValues"]
    v = model.config.vision
    if pixels.dim() == 1 and pixels.numel() % v.patch_dim == 0:
        pixels = pixels.reshape(-1, v.patch_dim)  # the wire's buffers are flat
    if len(counts) != rows or sum(counts) != grids.shape[0]:
        raise ValueError(
            f"rowImages {counts} must have one count per row ({rows}) summing to the imageGrids' {grids.shape[0]} images"
        )
    if pixels.dim() != 2 or pixels.shape[1] != v.patch_dim or pixels.shape[0] != int(grids.prod(-1).sum()):
        raise ValueError(
            f"pixelValues of shape {list(pixels.shape)} must be (patches, {v.patch_dim}) with one row per patch of the "
            f"grids {grids.tolist()} ({int(grids.prod(-1).sum())} patches)"
        )
    out, gi, pi = [], 0, 0
    for n in counts:
        if n == 0:
            out.append(None)
            continue
        g = grids[gi : gi + n]
        p = int(g.prod(-1).sum())
        out.append((pixels[pi : pi + p], g))
        gi, pi = gi + n, pi + p
    return out
