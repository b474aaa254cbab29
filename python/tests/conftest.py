"""The torch worker's pytest tier (`npm test` runs it through scripts/test-python.mjs): python/ on the import path so
`ragen_torch` imports as the worker does, one torch thread (tiny models; the machine is shared), and a worker fixture
that answers requests in-process through Worker.handle, the dispatch the frame loop uses.
"""

import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]
torch.set_num_threads(1)

import tiny  # noqa: E402
from ragen_torch.dist import Dist  # noqa: E402
from ragen_torch.worker import Worker  # noqa: E402


@pytest.fixture
def checkpoint(tmp_path):
    """A tiny random qwen2 checkpoint: (directory, raw config, weights by HF name)."""
    raw = tiny.config("qwen2")
    path, w = tiny.write_checkpoint(tmp_path / "model", raw)
    return path, raw, w


@pytest.fixture
def make_worker():
    """make_worker(path, budget, autocast, **load settings) -> (worker, load reply): a CPU worker of one rank (float32
    unless `autocast`, a factory as pick_device returns), loaded by the `load` request as src/engine/torch-worker.ts
    sends it."""

    def make(path, budget=4096, autocast=None, packing=False, **extra):
        worker = Worker(torch.device("cpu"), autocast, budget, Dist())
        h = {"path": path, "seed": 0, "tokenBudget": budget, "graphTokenBudget": budget, "packing": packing, **extra}
        reply, bufs = worker.handle("load", h, {})
        assert bufs == {}
        return worker, reply

    return make
