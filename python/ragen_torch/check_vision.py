"""The `vision` stage of `ragen bench gpu --check` (python -m ragen_torch.check vision): a random-weight Qwen2.5-VL
through the worker's requests with images (`generate` and `forward` with the rowImages / imageGrids / pixelValues
buffers, as src/engine/torch-worker.ts sends them): greedy decoding after the images must give the log-probs of a whole
teacher-forced pass over prompt + completion (decoding from the wrong position after an image breaks it), and the
stage times both. On a GPU the Qwen2.5-VL-3B shape, float32; without CUDA the tiny shape (CI's smoke run).
"""

import sys
import tempfile
import time

import torch

from .dist import Dist
from .random_checkpoint import SHAPES, write_random_checkpoint
from .worker import Worker


def log(*a):
    print("[check]", *a, file=sys.stderr, flush=True)


def _rows(c, n_rows, gen):
    """Prompts of `n_rows` rows: row 0 two images, row 1 text only, the rest one image each; random text ids around
    each image's <|vision_start|> <|image_pad|> x (h/2 * w/2) <|vision_end|>. Returns (prompts, grids per row)."""
    grids = [[1, 8, 8], [1, 6, 10]]  # 112 x 112 and 84 x 140 pixels: 16 and 15 image tokens, windows cut at the edge
    text = lambda n: torch.randint(0, c["bos_token_id"], (n,), generator=gen).tolist()  # noqa: E731
    prompts, row_grids = [], []
    for r in range(n_rows):
        mine = grids if r == 0 else [] if r == 1 else [grids[r % 2]]
        row = text(5 + r % 3)
        for t, h, w in mine:
            row += [c["vision_start_token_id"]] + [c["image_token_id"]] * (t * h * w // 4) + [c["vision_end_token_id"]]
            row += text(3)
        prompts.append(row + text(4))
        row_grids.append(mine)
    return prompts, row_grids


def _buffers(row_grids, gen, patch_dim):
    flat = [g for row in row_grids for g in row]
    patches = sum(t * h * w for t, h, w in flat)
    return {
        "rowImages": torch.tensor([len(r) for r in row_grids], dtype=torch.int32),
        "imageGrids": torch.tensor(flat, dtype=torch.int32).reshape(-1, 3),
        "pixelValues": torch.randn(patches, patch_dim, generator=gen),  # the processor's normalised range, roughly
    }


def vision():
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    shape = "qwen2.5-vl-3b" if cuda else "qwen2.5-vl-tiny"
    n_rows, new_tokens = (16, 32) if cuda else (3, 6)
    tol = 1e-3 if cuda else 1e-4  # float32 both; on a GPU decode and the whole pass take different kernels
    c = SHAPES[shape]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragen-check-vision-") as tmp:
        d = write_random_checkpoint(tmp, shape, 1, torch.bfloat16 if cuda else torch.float32, dev.type)
        worker = Worker(dev, None, 1 << 16, Dist())
        worker.handle(
            "load", {"path": d, "seed": 0, "tokenBudget": 1 << 16, "graphTokenBudget": 1 << 16, "packing": False}, {}
        )
    load_s = time.perf_counter() - t0
    log(f"vision: {shape} loaded on {dev.type} in {load_s:.1f} s")
    model = worker.roles.policy
    gen = torch.Generator().manual_seed(0)
    prompts, row_grids = _rows(c, n_rows, gen)
    images = _buffers(row_grids, gen, model.config.vision.patch_dim)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = worker.handle(
        "generate",
        {"params": {"maxNewTokens": new_tokens, "temperature": 0, "seed": 0}},
        {
            "prompts": torch.tensor([t for p in prompts for t in p], dtype=torch.int32),
            "lengths": torch.tensor([len(p) for p in prompts], dtype=torch.int32),
            **images,
        },
    )[1]
    if cuda:
        torch.cuda.synchronize()
    gen_s = time.perf_counter() - t0
    lens = out["lengths"].tolist()
    toks, lps = out["tokens"].split(lens), out["logprobs"].split(lens)
    # No vision token is sampled (the model's suppressed_ids), so a teacher-forced pass scores each completion whole.
    off = set(worker.roles.policy.config.suppressed_ids)
    stray = [t for tok in toks for t in tok.tolist() if t in off]
    if stray:
        raise RuntimeError(f"vision: generate sampled vision token ids {stray[:5]}, which the model suppresses")
    cut = [len(t) for t in toks]
    rows = [p + t.tolist()[:n] for p, t, n in zip(prompts, toks, cut)]
    T = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.int32)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r)
    t0 = time.perf_counter()
    forward = worker.handle(
        "forward",
        {"B": len(rows), "T": T, "role": "policy", "entropy": False},
        {"ids": ids.reshape(-1), "lengths": torch.tensor([len(r) for r in rows], dtype=torch.int32), **images},
    )[1]["logprobs"]
    if cuda:
        torch.cuda.synchronize()
    fwd_s = time.perf_counter() - t0
    diff, compared = 0.0, 0
    for b, (p, n) in enumerate(zip(prompts, cut)):
        ref = forward[b, len(p) : len(p) + n].float()
        diff = max(diff, (lps[b][:n].float() - ref).abs().max().item() if n else 0.0)
        compared += n
    tokens = sum(lens)
    passed = compared >= n_rows and diff < tol
    image_tokens = sum(t * h * w // 4 for row in row_grids for t, h, w in row)
    log(
        f"vision: {n_rows} rows ({sum(len(g) for g in row_grids)} images, {image_tokens} image tokens), {tokens} tokens "
        f"in {gen_s:.2f} s; greedy log-probs vs a teacher-forced pass: max diff {diff:.2e} over {compared} tokens "
        f"(tolerance {tol:g})"
    )
    return {
        "shape": shape,
        "device": dev.type,
        "passed": passed,
        "rows": n_rows,
        "images": sum(len(g) for g in row_grids),
        "imageTokens": image_tokens,
        "tokens": tokens,
        "tokensCompared": compared,
        "logprobMaxDiff": diff,
        "tolerance": tol,
        "loadSeconds": load_s,
        "generateSeconds": gen_s,
        "tokensPerSecond": tokens / gen_s,
        "forwardSeconds": fwd_s,
        "peakMemoryBytes": torch.cuda.max_memory_allocated(dev) if cuda else None,
    }
