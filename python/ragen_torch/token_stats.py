"""Per-token log-probability of the sampled token and entropy of the next-token distribution, straight from the hidden
states and the output head, without the (tokens, vocabulary) float32 logits tensor that `log_softmax` over the whole
batch needs (151,936 columns for Qwen: ~10 GB at 16k tokens, three times over with the softmax and the entropy).

Rows are taken a chunk at a time: the chunk's logits are computed in the matmul's dtype, upcast to float32, reduced
with a logsumexp, and dropped. The backward recomputes each chunk's logits instead of keeping them:
    d logp_t / dz = onehot(t) - p            d H / dz = -p * (log p + H)
so memory holds one chunk's logits, whatever the batch. `plain_token_stats` is the reference computation (the one the
worker used before): the tests hold the two equal in value and gradient.

`suppressed` token ids (a vision-language model's vision tokens, which only the processor writes) take the logit
SUPPRESSED_LOGIT in every chunk, so both outputs are those of the distribution renormalized without them, the one the
sampler (generate.py) draws from; a target that is itself suppressed (a prompt's image token) gets log-prob 0 and no
gradient. src/model/suppress.ts is the local engine's twin.
"""

import torch
import torch.nn.functional as F

# Bytes of float32 scratch per chunk: logits, probabilities and their gradient (3 x rows x V x 4 bytes).
DEFAULT_CHUNK_BYTES = 1 << 30

# Softmax gives a suppressed id exactly 0 and 0 * logit stays 0 in the entropy (-inf would make it NaN).
SUPPRESSED_LOGIT = -1e30


def suppressed_ids(model):
    """The ids `model` never samples (a VLM's vision tokens: its config's `suppressed_ids`), or None."""
    return getattr(model.config, "suppressed_ids", None) or None


def suppress(z, ids):
    """Logits (..., V) with the columns `ids` (a LongTensor on z's device) at SUPPRESSED_LOGIT (a copy)."""
    return z.index_fill(-1, ids, SUPPRESSED_LOGIT)


def _autocast_dtype(device):
    """The dtype autocast would run a matmul in on `device`, or None when autocast is off there."""
    if device.type not in ("cuda", "cpu"):
        return None
    if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4: by device type (the older calls are deprecated)
        return torch.get_autocast_dtype(device.type) if torch.is_autocast_enabled(device.type) else None
    if device.type == "cuda" and torch.is_autocast_enabled():
        return torch.get_autocast_gpu_dtype()
    if device.type == "cpu" and torch.is_autocast_cpu_enabled():
        return torch.get_autocast_cpu_dtype()
    return None


def _rows_per_chunk(V, chunk_bytes):
    return max(1, chunk_bytes // (3 * 4 * V))


class _TokenStats(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, w, targets, dtype, want_entropy, rows, suppressed):
        hc, wc = h.to(dtype), w.to(dtype)
        N = h.shape[0]
        logp = torch.empty(N, dtype=torch.float32, device=h.device)
        ent = torch.empty(N if want_entropy else 0, dtype=torch.float32, device=h.device)
        for s in range(0, N, rows):
            e = min(N, s + rows)
            z = F.linear(hc[s:e], wc).float()  # (n, V)
            if suppressed is not None:
                z = suppress(z, suppressed)
            lse = z.logsumexp(-1)
            logp[s:e] = z.gather(-1, targets[s:e, None]).squeeze(-1) - lse
            if want_entropy:
                ent[s:e] = lse - ((z - lse[:, None]).exp() * z).sum(
                    -1
                )  # H = lse - sum_j p_j z_j, p from the lse already taken
        if suppressed is not None:
            logp.masked_fill_(torch.isin(targets, suppressed), 0.0)
        ctx.save_for_backward(h, w, targets)
        ctx.dtype, ctx.want_entropy, ctx.rows, ctx.suppressed = dtype, want_entropy, rows, suppressed
        ctx.set_materialize_grads(False)
        return logp, ent

    @staticmethod
    def backward(ctx, g_logp, g_ent):
        h, w, targets = ctx.saved_tensors
        dtype, rows, suppressed = ctx.dtype, ctx.rows, ctx.suppressed
        hc, wc = h.to(dtype), w.to(dtype)
        N = h.shape[0]
        if g_logp is not None and suppressed is not None:  # a suppressed target's log-prob is the constant 0
            g_logp = g_logp.masked_fill(torch.isin(targets, suppressed), 0.0)
        dh = torch.zeros_like(h) if ctx.needs_input_grad[0] else None
        dw = torch.zeros(w.shape, dtype=torch.float32, device=w.device) if ctx.needs_input_grad[1] else None
        for s in range(0, N, rows):
            e = min(N, s + rows)
            z = F.linear(hc[s:e], wc).float()
            if suppressed is not None:
                z = suppress(z, suppressed)
            logp_all = z.log_softmax(-1)
            p = logp_all.exp()
            dz = torch.zeros_like(z)
            if g_logp is not None:
                g = g_logp[s:e, None]
                dz -= g * p
                dz.scatter_add_(-1, targets[s:e, None], g)
            if g_ent is not None and ctx.want_entropy:
                H = -(p * logp_all).sum(-1, keepdim=True)
                dz -= g_ent[s:e, None] * p * (logp_all + H)
            dzc = dz.to(dtype)
            if dh is not None:
                dh[s:e] = (dzc @ wc).to(h.dtype)
            if dw is not None:
                dw += (dzc.t() @ hc[s:e]).float()
        return dh, None if dw is None else dw.to(w.dtype), None, None, None, None, None


def token_stats(h, w, targets, entropy=True, chunk_bytes=DEFAULT_CHUNK_BYTES, suppressed=None):
    """h (N, C) hidden states, w (V, C) output head, targets (N,) token ids -> (log p(target) (N,), entropy (N,) or
    None), float32, differentiable in h and w. The matmul runs in autocast's dtype when autocast is on (as
    `F.linear(h, w)` would), else in h's and w's common dtype; logits never exist for more than one chunk of rows.
    `suppressed`: token ids (a list) outside the distribution (see the module's docstring), or None."""
    dtype = _autocast_dtype(h.device) or torch.promote_types(h.dtype, w.dtype)
    rows = _rows_per_chunk(w.shape[0], chunk_bytes)
    ids = None if not suppressed else torch.tensor(suppressed, dtype=torch.long, device=h.device)
    with torch.autocast(h.device.type, enabled=False):
        logp, ent = _TokenStats.apply(h, w, targets, dtype, bool(entropy), rows, ids)
    return logp, ent if entropy else None


def plain_token_stats_from_logits(logits, targets, entropy=True, suppressed=None):
    """The reference: float32 log_softmax over the whole (..., V) logits (without the `suppressed` ids), gather, and
    -sum(p log p); a suppressed target's log-prob is 0."""
    z = logits.float()
    if suppressed:
        ids = torch.tensor(suppressed, dtype=torch.long, device=z.device)
        z = suppress(z, ids)
    logp_all = z.log_softmax(-1)
    logp = logp_all.gather(-1, targets[..., None]).squeeze(-1)
    if suppressed:
        logp = logp.masked_fill(torch.isin(targets, ids), 0.0)
    return logp, (-(logp_all.exp() * logp_all).sum(-1) if entropy else None)


def plain_token_stats(h, w, targets, entropy=True, suppressed=None):
    """`token_stats` computed the plain way, from the whole logits tensor."""
    return plain_token_stats_from_logits(F.linear(h, w), targets, entropy, suppressed)
