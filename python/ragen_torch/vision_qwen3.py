"""Qwen3-VL's vision tower in plain PyTorch, beside Qwen2.5-VL's (vision.py): patch embedding with a bias, a learned
position table resized bilinearly to each image's grid, blocks with LayerNorm, 2-D rotary and full attention per image
and a GELU MLP, the 2x2 merger, and the DeepStack mergers whose features are added to the first language layers'
outputs at the image positions. Names are transformers' (`visual.*`).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .model import attention, rotate_half
from .safetensors_io import CheckpointError

ACTIVATIONS = {"gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"), "gelu": F.gelu, "silu": F.silu}


class Qwen3VisionConfig:
    """The `vision_config` fields of a Qwen3-VL config.json."""

    def __init__(self, raw, source):
        for key in ("depth", "hidden_size", "intermediate_size", "num_heads", "out_hidden_size"):
            if not isinstance(raw.get(key), int):
                raise CheckpointError(f"{source}: vision_config: missing or non-integer `{key}` (got {raw.get(key)!r})")
        act = raw.get("hidden_act", "gelu_pytorch_tanh")
        if act not in ACTIVATIONS:
            raise CheckpointError(
                f"{source}: vision_config.hidden_act `{act}` is not supported ({', '.join(ACTIVATIONS)})"
            )
        self.act = ACTIVATIONS[act]
        self.depth, self.C, self.F = raw["depth"], raw["hidden_size"], raw["intermediate_size"]
        self.H, self.out = raw["num_heads"], raw["out_hidden_size"]
        self.D = self.C // self.H
        self.channels = raw.get("in_channels", 3)
        self.patch = raw.get("patch_size", 16)
        self.temporal = raw.get("temporal_patch_size", 2)
        self.merge = raw.get("spatial_merge_size", 2)
        self.positions = raw.get("num_position_embeddings", 2304)
        self.side = int(math.isqrt(self.positions))
        self.deepstack = list(raw.get("deepstack_visual_indexes") or [])
        self.theta = (raw.get("rope_parameters") or {}).get("rope_theta", 10000.0)
        self.patch_dim = self.channels * self.temporal * self.patch * self.patch
        if self.side * self.side != self.positions:
            raise CheckpointError(f"{source}: vision_config.num_position_embeddings {self.positions} is not a square")


class Merger(nn.Module):
    """LayerNorm (over each patch, or over the 2x2 group: `postshuffle`), Linear, GELU, Linear."""

    def __init__(self, v, postshuffle):
        super().__init__()
        self.width, self.postshuffle = v.C * v.merge * v.merge, postshuffle
        self.norm = nn.LayerNorm(self.width if postshuffle else v.C, eps=1e-6)
        self.linear_fc1 = nn.Linear(self.width, self.width)
        self.linear_fc2 = nn.Linear(self.width, v.out)

    def forward(self, x):
        x = self.norm(x.view(-1, self.width) if self.postshuffle else x).view(-1, self.width)
        return self.linear_fc2(F.gelu(self.linear_fc1(x)))


class Qwen3VisionBlock(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.v = v
        self.norm1 = nn.LayerNorm(v.C, eps=1e-6)
        self.norm2 = nn.LayerNorm(v.C, eps=1e-6)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(v.C, 3 * v.C)
        self.attn.proj = nn.Linear(v.C, v.C)
        self.mlp = nn.Module()
        self.mlp.linear_fc1 = nn.Linear(v.C, v.F)
        self.mlp.linear_fc2 = nn.Linear(v.F, v.C)

    def forward(self, x, cos, sin, mask):
        N, v = x.shape[0], self.v
        q, k, val = self.attn.qkv(self.norm1(x)).view(N, 3, v.H, v.D).unbind(1)  # each (N, H, D)
        q = (q.float() * cos[:, None] + rotate_half(q.float()) * sin[:, None]).to(x.dtype)
        k = (k.float() * cos[:, None] + rotate_half(k.float()) * sin[:, None]).to(x.dtype)
        y = attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], val.transpose(0, 1)[None], mask[None, None])
        x = x + self.attn.proj(y[0].transpose(0, 1).reshape(N, v.C))
        return x + self.mlp.linear_fc2(v.act(self.mlp.linear_fc1(self.norm2(x))))


def block_order(h, w, m):
    """(rows, columns) of an h x w grid's patches in the processor's order: 2x2 merge groups, each row-major."""
    r, c = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    shape = (h // m, m, w // m, m)
    return r.reshape(shape).transpose(1, 2).flatten(), c.reshape(shape).transpose(1, 2).flatten()


class Qwen3VisionTower(nn.Module):
    """pixel values (N, 3*2*16*16), grid (n, 3) -> (features (N / 4, out), [DeepStack features (N / 4, out)])."""

    def __init__(self, v):
        super().__init__()
        self.v = v
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Module()  # a Conv3d whose stride is its kernel: one linear map per patch
        self.patch_embed.proj.weight = nn.Parameter(torch.empty(v.C, v.channels, v.temporal, v.patch, v.patch))
        self.patch_embed.proj.bias = nn.Parameter(torch.zeros(v.C))
        self.pos_embed = nn.Embedding(v.positions, v.C)
        self.blocks = nn.ModuleList(Qwen3VisionBlock(v) for _ in range(v.depth))
        self.merger = Merger(v, postshuffle=False)
        self.deepstack_merger_list = nn.ModuleList(Merger(v, postshuffle=True) for _ in v.deepstack)

    def forward(self, pixels, grid):
        v = self.v
        if pixels.dim() != 2 or pixels.shape[1] != v.patch_dim:
            raise ValueError(f"pixel values must be (patches, {v.patch_dim}), got {list(pixels.shape)}")
        w = self.patch_embed.proj.weight
        x = F.linear(pixels.to(w.dtype), w.reshape(v.C, -1), self.patch_embed.proj.bias)  # (N, C)
        table = self.pos_embed.weight.view(1, v.side, v.side, v.C).permute(0, 3, 1, 2).float()
        pos, rc, frame = [], [], []
        for i, (t, h, wd) in enumerate(grid.tolist()):
            # the learned side x side table resized to the image's grid (bilinear, corners aligned), per patch
            grid_pos = F.interpolate(table, size=(h, wd), mode="bilinear", align_corners=True)[0]  # (C, h, w)
            r, c = block_order(h, wd, v.merge)
            pos.append(grid_pos[:, r, c].t().repeat(t, 1))
            rc.append(torch.stack([r, c], -1).repeat(t, 1))
            frame.append(torch.full((t * h * wd,), i) + torch.arange(t).repeat_interleave(h * wd) * len(grid))
        x = x + torch.cat(pos).to(x.dtype)
        rc = torch.cat(rc).to(x.device)
        half = v.D // 2
        inv = 1.0 / (v.theta ** (torch.arange(0, half, 2, dtype=torch.float, device=x.device) / half))
        ang = (rc[..., None].float() * inv).flatten(1)  # (N, D/2): rows' angles, then columns'
        emb = torch.cat((ang, ang), -1)
        cos, sin = emb.cos(), emb.sin()
        frame = torch.cat(frame).to(x.device)
        mask = frame[:, None] == frame[None, :]  # full attention inside each image (each frame of a video)
        deep = []
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, mask)
            if i in v.deepstack:
                deep.append(self.deepstack_merger_list[v.deepstack.index(i)](x))
        return self.merger(x), deep
