"""The decode step over a static KV cache: the rows stay in the preallocated cache (finished ones are computed and their
outputs dropped, until generate.py moves the live half into a smaller cache), positions and the write index are
tensors, so the step has fixed shapes and no host sync; on CUDA it is captured as a CUDA graph and replayed, so a
step costs one launch instead of hundreds of Python ops. Attention reads the cache's first keys up to the next multiple
of BUCKET past the write index, not the whole capacity: one graph per bucket, so the step's cost follows the written
context, and a turn's last steps cost what its first ones do plus the keys written since.
"""

import contextlib
import os
import sys

import torch

from .model import rope_tables

DECODE_MODES = ("eager", "static", "graph")
BUCKET = 256  # keys attended over: a multiple of this (or the capacity), so graphs are captured once per bucket


def decode_mode(device):
    """RAGEN_TORCH_DECODE (eager | static | graph), else graph on CUDA and eager elsewhere."""
    mode = os.environ.get("RAGEN_TORCH_DECODE") or ("graph" if device.type == "cuda" else "eager")
    if mode not in DECODE_MODES:
        raise ValueError(
            f"RAGEN_TORCH_DECODE=`{mode}` is not a decode mode; use one of {', '.join(DECODE_MODES)} (or unset it)"
        )
    if mode == "graph" and device.type != "cuda":
        raise ValueError(
            f"RAGEN_TORCH_DECODE=graph needs a CUDA device, the worker runs on {device}; use static or eager"
        )
    return mode


class StaticStep:
    """Callable (tok (live,), live rows (live,), cur) -> logits (live, V) float32 of the next position, over the full
    batch's cache. `graph`: capture the step as a CUDA graph at the first call and replay it after."""

    def __init__(self, model, cache, key_valid, pads, graph=False, autocast=None):
        self.model, self.cache, self.key_valid, self.pads = model, cache, key_valid, pads
        n, dev = key_valid.shape[0], key_valid.device
        self.rows = n
        self.tok = torch.zeros(n, 1, dtype=torch.long, device=dev)
        self.pos = torch.zeros(n, 1, dtype=torch.long, device=dev)
        self.cur = torch.zeros(1, dtype=torch.long, device=dev)
        self.keys = torch.arange(key_valid.shape[1], device=dev)[None, :]
        self.capacity, self.span = key_valid.shape[1], 0  # span: the keys the current bucket attends over
        self.graph, self.autocast = graph, autocast
        self.captured, self.out, self.pool = None, None, None

    def _run(self):
        m, c = self.model, self.model.config
        h = m.model.embed_tokens(self.tok)
        cos, sin = rope_tables(self.pos, c.D, c.theta, h.dtype)
        S = self.span
        mask = (self.key_valid[:, :S] & (self.keys[:, :S] <= self.cur))[
            :, None, None, :
        ]  # (n, 1, 1, S): attention reads S keys
        for i, layer in enumerate(m.model.layers):
            h = layer(h, cos, sin, mask, self.cache[i], self.cur)
        return m.logits(m.model.norm(h)[:, -1]).float()

    def _ctx(self):
        # Autocast's weight-cast cache would hold tensors made during capture; the captured graph must own its casts.
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False) if self.graph else self.autocast()

    def __call__(self, tok, live, cur):
        self.tok.index_copy_(0, live, tok[:, None])  # finished rows keep their last token; their outputs are dropped
        self.pos.copy_((cur - self.pads)[:, None])
        self.cur.fill_(cur)
        span = min(self.capacity, (cur // BUCKET + 1) * BUCKET)  # covers the key written at `cur`
        if span != self.span:  # a new bucket: the old graph is never replayed again (the write index only grows)
            self.span, self.captured = span, None
        if self.graph and self.captured is None:
            try:
                self._capture()
            except RuntimeError as e:  # an op this torch cannot capture: decode on without the graph, and say so
                print(
                    f"[ragen_torch] CUDA graph capture of the decode step failed ({str(e).splitlines()[0]}); decoding with "
                    "the static cache without a graph (RAGEN_TORCH_DECODE=static skips the attempt)",
                    file=sys.stderr,
                    flush=True,
                )
                self.graph, self.captured = False, None
        if self.graph:
            self.captured.replay()
            out = self.out
        else:
            with self._ctx():
                out = self._run()
        return out.index_select(0, live)

    def _capture(self):
        # Warm-up runs on a side stream (as torch.cuda.graphs asks) compute this very step: the cache write at `cur`
        # is the one the replay repeats, so they leave the cache as the step would.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), self._ctx():
            for _ in range(2):
                self._run()
        torch.cuda.current_stream().wait_stream(side)
        if self.pool is None:  # the buckets' graphs share one memory pool (one is replayed at a time)
            self.pool = torch.cuda.graph_pool_handle()
        self.captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.captured, pool=self.pool), self._ctx():
            self.out = self._run()
