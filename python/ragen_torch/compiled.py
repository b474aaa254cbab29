"""model.torch.compile: torch.compile of each decoder layer for the teacher-forced passes (log-probs, values, backward).
Decoding stays eager (its cache writes at a tensor index are what the CUDA graph captures). Experimental: not yet
measured on a GPU; the eager layers stay the reference.
"""

import sys

import torch


def compile_layers(models):
    """Compile the layers of each Decoder in `models` (Decoder.hidden runs them when no KV cache is passed); on a torch
    without torch.compile say so once on stderr and leave them eager. Returns whether they were compiled."""
    if not hasattr(torch, "compile"):
        print(
            f"[ragen_torch] model.torch.compile: torch {torch.__version__} has no torch.compile (added in torch 2.0), so the "
            "model runs eager; install torch >= 2.0 or set model.torch.compile=false",
            file=sys.stderr,
            flush=True,
        )
        return False
    for m in models:
        m.compiled = [torch.compile(layer) for layer in m.model.layers]
    return True
