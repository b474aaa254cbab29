"""Batched sampling with a KV cache, the contract of src/model/generate.ts: prompts left-padded into one cache
(per-row RoPE positions, a key mask hides the padding), one token per step; finished rows leave the batch (at once in
eager mode, in decode.py's static and graph modes each time half of the rows are done); each sampled id comes with its
log-prob at temperature 1. Temperature, then top-k, then top-p, as Hugging Face's warpers. A model's suppressed ids (a
VLM's vision tokens) are never sampled and the log-probs are of the distribution without them (token_stats.py scores
the same distribution).
"""

import contextlib
import hashlib
import math

import torch

from .decode import StaticStep, decode_mode
from .model import HAS_SDPA
from .token_stats import suppress, suppressed_ids


class NonFiniteLogitsError(Exception):
    """The model computed NaN or infinite logits: no token is sampled from them (src/model/generate.ts's twin)."""

    def __init__(self, model, step, index, position, logprob):
        if isinstance(logprob, float):  # spelled as JavaScript does (the reply is JSON, which has no NaN)
            logprob = "NaN" if math.isnan(logprob) else ("Infinity" if logprob > 0 else "-Infinity")
        self.detail = {"model": model, "step": step, "index": index, "position": position, "logprob": logprob}
        super().__init__(
            f"Model `{model}` computed non-finite logits (log-prob {logprob}) at decode step {step} (position {position} of prompt {index}), so no token was sampled: "
            "its weights overflow float32 in the forward pass (a huge or diverged weight); check the checkpoint or use an earlier one."
        )

    def renumbered(self, index):
        """The same error for prompt `index` of the caller's list."""
        d = self.detail
        return NonFiniteLogitsError(d["model"], d["step"], index, d["position"], d["logprob"])


def pick(logits, temperature, top_k, top_p, generator):
    """Next tokens (B,) from logits (B, V): greedy at temperature 0, else sampled after top-k / top-p filtering."""
    if temperature == 0:
        return logits.argmax(-1)
    # A row with a NaN or +inf logit softmaxes to NaN, which multinomial refuses with a raw error: such a row draws from
    # ones instead, and its non-finite log-prob is what generate reports (one test per row, no pass over V here).
    probs = (logits / temperature).softmax(-1).nan_to_num(nan=1.0)
    V = probs.shape[-1]
    if 0 < top_k < V:
        kth = probs.topk(top_k, dim=-1).values[:, -1:]
        probs = probs.masked_fill(probs < kth, 0.0)
    if top_p < 1:
        # The nucleus: the shortest run of the most likely tokens whose mass reaches top_p of what is left.
        s, _ = probs.sort(-1, descending=True)
        before = s.cumsum(-1) - s
        kept = before < top_p * s.sum(-1, keepdim=True)
        threshold = torch.where(kept, s, torch.full_like(s, float("inf"))).min(-1, keepdim=True).values
        probs = probs.masked_fill(probs < threshold, 0.0)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def generate(
    model,
    prompts,
    params,
    pieces=None,
    budget=1 << 16,
    autocast=None,
    mode=None,
    share_prompts=True,
    source="(in memory)",
    images=None,
):
    """Sample completions of `prompts` (lists of ids). Returns [(tokens, logprobs, finish_reason)] in prompt order.
    `pieces`: each token id's text (stop strings); `autocast`: a factory of the compute-precision context, or None;
    `mode`: the decode step, eager (rows leave the cache), static or graph (decode.py); default decode_mode();
    `share_prompts`: prefill each distinct prompt once (False: every row its own prefill, the reference); `source`: the
    model's name in a NonFiniteLogitsError, raised when a sampled token's log-prob (finite exactly when its row's logits
    are) is not finite. `images`: per prompt None or (pixel values, grids) (vision.py; a VLDecoder): prompts with
    images prefill their features and 3-D positions and decode eagerly, each new token at the row's text position after
    its images (max position + 1, as transformers' rope_deltas)."""
    dev = model.head_weight().device
    if images is not None and all(im is None for im in images):
        images = None
    mode = "eager" if images is not None else mode or decode_mode(dev)  # the static step has no per-row shift
    c = model.config
    n, max_new = len(prompts), int(params["maxNewTokens"])
    results = [([], [], "length") for _ in prompts]
    if n == 0 or max_new == 0:
        return results
    temperature, top_k, top_p = (
        float(params["temperature"]),
        int(params.get("topK") or 0),
        float(params.get("topP") or 1),
    )
    stop_ids = set(params.get("stopTokenIds") or [])
    stops = [s for s in params.get("stopStrings") or [] if s]
    if stops and pieces is None:
        raise ValueError("stopStrings need the tokenizer's token texts; the engine sends them at load time")
    window = max([len(s) for s in stops] + [0]) + 4
    gen = torch.Generator(device=dev)
    gen.manual_seed(int(params["seed"]) & ((1 << 63) - 1))
    P = max(len(p) for p in prompts)
    cap = P + max_new
    pads = torch.tensor([P - len(p) for p in prompts], device=dev)
    ids = torch.zeros(n, P, dtype=torch.long, device=dev)
    for i, p in enumerate(prompts):
        ids[i, P - len(p) :] = torch.tensor(p, dtype=torch.long)
    key_valid = torch.arange(cap, device=dev)[None, :] >= pads[:, None]  # (n, cap)
    positions = (torch.arange(P, device=dev)[None, :] - pads[:, None]).clamp(min=0)
    dtype = torch.bfloat16 if autocast is not None else model.head_weight().dtype
    # Identical prompts (a group's first turn: G copies of one initial state) are prefilled once and their cache rows
    # copied: the same left padding and positions give the same keys, values and logits.
    first, inverse, uniq = {}, [], []  # uniq: the rows prefilled; inverse: each row's place among them
    for i, p in enumerate(prompts):
        key = (tuple(p), image_key(images[i]) if images is not None else None) if share_prompts else i
        if key not in first:
            first[key] = len(uniq)
            uniq.append(i)
        inverse.append(first[key])
    U = len(uniq)
    cache = [tuple(torch.zeros(U, c.K, cap, c.D, device=dev, dtype=dtype) for _ in range(2)) for _ in range(c.n_layers)]
    with torch.no_grad(), autocast() if autocast is not None else contextlib.nullcontext():
        # Prefill in row ranges: activations within the token budget.
        logits = []
        step_rows = max(1, budget // max(P, 1))
        if not HAS_SDPA:  # the plain attention holds (rows, H, P, P) scores: keep them under 2^27 floats
            step_rows = max(1, min(step_rows, (1 << 27) // (c.H * P * P)))
        rows_u = torch.tensor(uniq, device=dev)
        ids_u, pos_u, valid_u = (
            ids.index_select(0, rows_u),
            positions.index_select(0, rows_u),
            key_valid.index_select(0, rows_u),
        )
        shift = torch.zeros(n, dtype=torch.long, device=dev)  # decode position - text position (images' rows)
        for a in range(0, U, step_rows):
            b = min(U, a + step_rows)
            sub = [(k[a:b], v[a:b]) for k, v in cache]
            embeds, pos, inject = None, pos_u[a:b], None
            if images is not None and any(images[uniq[j]] is not None for j in range(a, b)):
                embeds, pos, inject = model.multimodal_inputs(
                    ids_u[a:b], [images[uniq[j]] for j in range(a, b)], pads[rows_u[a:b]]
                )
                for j in range(a, b):
                    i = uniq[j]
                    shift[[r for r in range(n) if inverse[r] == j]] = int(pos[:, j - a].max()) + 1 - len(prompts[i])
            h = model.hidden(ids_u[a:b], pos, valid_u[a:b], sub, 0, embeds=embeds, inject=inject)
            logits.append(model.logits(h[:, -1]).float())
        logits = torch.cat(logits)
        if U < n:
            expand = torch.tensor(inverse, device=dev)
            cache = [(k.index_select(0, expand), v.index_select(0, expand)) for k, v in cache]
            logits = logits.index_select(0, expand)
        rows = list(range(n))
        static = None if mode == "eager" else StaticStep(model, cache, key_valid, pads, mode == "graph", autocast)
        live = torch.arange(n, device=dev)  # static: the cache rows still sampling
        cur = P
        ids_off = suppressed_ids(model)
        ids_off = None if ids_off is None else torch.tensor(ids_off, dtype=torch.long, device=dev)
        for step in range(max_new):
            if ids_off is not None:
                logits = suppress(logits, ids_off)
            tok = pick(logits, temperature, top_k, top_p, gen)
            lp = logits.log_softmax(-1).gather(-1, tok[:, None]).squeeze(-1)
            done = []
            for j, (t, logp) in enumerate(zip(tok.tolist(), lp.tolist())):
                toks, lps, _ = results[rows[j]]
                if not math.isfinite(logp):
                    raise NonFiniteLogitsError(source, step, rows[j], len(prompts[rows[j]]) + step, logp)
                toks.append(t)
                lps.append(logp)
                hit = t in stop_ids or (
                    stops
                    and any(
                        s in "".join(pieces[x] if 0 <= x < len(pieces) else "" for x in toks[-window:]) for s in stops
                    )
                )
                if hit:
                    results[rows[j]] = (toks, lps, "stop")
                done.append(hit)
            if step == max_new - 1 or all(done):
                break
            if any(done):  # finished rows leave the batch
                keep = torch.tensor([j for j, d in enumerate(done) if not d], device=dev)
                tok = tok.index_select(0, keep)
                rows = [r for r, d in zip(rows, done) if not d]
                if static is None:
                    cache = [(k.index_select(0, keep), v.index_select(0, keep)) for k, v in cache]
                    key_valid, pads = key_valid.index_select(0, keep), pads.index_select(0, keep)
                    shift = shift.index_select(0, keep)
                else:  # the static cache keeps its shape: finished rows are computed and their outputs dropped,
                    live = live.index_select(0, keep)
                    if len(rows) <= static.rows // 2:  # until half are done: then a cache of the live rows (and a
                        cache = [(k.index_select(0, live), v.index_select(0, live)) for k, v in cache]  # new graph)
                        key_valid, pads = key_valid.index_select(0, live), pads.index_select(0, live)
                        static = StaticStep(model, cache, key_valid, pads, static.graph, autocast)
                        live = torch.arange(len(rows), device=dev)
            if static is None:
                pos = (cur - pads + shift)[:, None]
                h = model.hidden(tok[:, None], pos, key_valid, cache, cur)
                logits = model.logits(h[:, -1]).float()
            else:
                logits = static(tok, live, cur)
            cur += 1
    return results


def image_key(im):
    """A prompt's images as a key for sharing its prefill: identical ids with other pixels are another prompt."""
    if im is None:
        return None
    pixels, grids = im
    return (
        tuple(grids.reshape(-1).tolist()),
        hashlib.sha1(pixels.detach().float().cpu().numpy().tobytes()).hexdigest(),
    )
