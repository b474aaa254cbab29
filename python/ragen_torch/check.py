"""The Python stages of `ragen bench gpu --check` (python -m ragen_torch.check STAGE): `versions` (torch, CUDA,
transformers, peft, the device) and `decode` (the CUDA-graph decode step against eager decoding, the cases of
src/engine/torch-gpu.test.ts). Each prints one JSON object on stdout and progress on stderr; `fsdp` is check_fsdp.py,
`vision` check_vision.py.
"""

import contextlib
import json
import platform
import sys
import tempfile

import torch


def log(*a):
    print("[check]", *a, file=sys.stderr, flush=True)


def version_of(name):
    """A package's version, or None when it does not import (any failure: a broken install is reported as absent)."""
    try:
        return __import__(name).__version__
    except Exception:  # noqa: BLE001
        return None


class _Tee:
    """stderr that is also kept: the decode step says on stderr when CUDA graph capture failed (it then decodes
    without the graph, so identical tokens alone would not show that the graph ran)."""

    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, s):
        self.text.append(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()


def versions():
    cuda = torch.cuda.is_available()
    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudaAvailable": cuda,
        "transformers": version_of("transformers"),
        "peft": version_of("peft"),
        "gpus": [],
        "cudnn": torch.backends.cudnn.version() if cuda else None,
    }
    for i in range(torch.cuda.device_count() if cuda else 0):
        p = torch.cuda.get_device_properties(i)
        out["gpus"].append({"name": p.name, "memoryBytes": p.total_memory, "capability": f"{p.major}.{p.minor}"})
    log(
        f"torch {out['torch']}, CUDA {out['cuda']}, transformers {out['transformers']}, peft {out['peft']}, "
        f"{len(out['gpus'])} GPU(s){': ' + out['gpus'][0]['name'] if out['gpus'] else ''}"
    )
    return out


def decode():
    """Greedy and stop-id decoding of 8 ragged prompts on the tiny random shape, float32 and bf16: the CUDA graph
    (on a CPU: the static step that the graph captures) against eager. Tokens must be identical; log-probs are
    reported as the largest difference, with the GPU test's tolerances (1e-4 float32, 2e-2 bf16). The attention bucket
    is 8 keys here (256 in use), so that every case crosses buckets: a graph captured per bucket, replayed in turn."""
    from . import decode as decode_step
    from .generate import generate
    from .model import load_decoder
    from .random_checkpoint import write_random_checkpoint

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    fast = "graph" if cuda else "static"
    with tempfile.TemporaryDirectory(prefix="ragen-check-") as tmp:
        d = write_random_checkpoint(tmp, "tiny", 3, torch.float32)
        m = load_decoder(d, dev).eval()
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, m.config.V, (n,), generator=g).tolist() for n in (3, 9, 5, 12, 1, 7, 4, 8)]
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    bf16 = lambda: torch.autocast(dev.type, dtype=torch.bfloat16)  # noqa: E731
    cases, ok, tee = [], True, _Tee(sys.stderr)
    bucket, decode_step.BUCKET = decode_step.BUCKET, 8  # prompts of up to 12 tokens + 24 new: spans 16, 24, 32, 36
    # Stop ids that make rows stop early whatever the vocabulary: the token each row's greedy decode gives at step
    # 3 + row % 6 (a fixed list such as range(0, 256, 10) is rarely sampled from a 152k-token vocabulary).
    with torch.no_grad():
        plain = generate(m, prompts, dict(maxNewTokens=24, seed=5, temperature=0), None, 4096, None, "eager")
    stop_ids = sorted({row[0][3 + i % 6] for i, row in enumerate(plain)})
    # bf16 on a CPU is emulated and not what this stage is for; there eager (finished rows leave the batch) and the
    # static step (they stay) round differently and near-tied random-weight argmaxes flip: float32 only.
    precisions = (("float32", None, 1e-4), ("bfloat16", bf16, 2e-2)) if cuda else (("float32", None, 1e-4),)
    for precision, autocast, tol in precisions:
        for name, p in (("greedy", dict(temperature=0)), ("stops", dict(temperature=0, stopTokenIds=stop_ids))):
            params = dict(maxNewTokens=24, seed=5, **p)
            eager = generate(m, prompts, params, None, 4096, autocast, "eager")
            with contextlib.redirect_stderr(tee):
                other = generate(m, prompts, params, None, 4096, autocast, fast)
            same = [a[0] for a in eager] == [b[0] for b in other]
            diff = max(
                (abs(x - y) for a, b in zip(eager, other) if len(a[1]) == len(b[1]) for x, y in zip(a[1], b[1])),
                default=0.0,
            )
            stopped = sum(1 for a in eager if a[2] == "stop")
            case = {
                "precision": precision,
                "case": name,
                "tokensIdentical": same,
                "logprobMaxDiff": diff,
                "tolerance": tol,
                "rowsStopped": stopped,
            }
            ok = ok and same and diff < tol
            cases.append(case)
            log(
                f"decode {precision}/{name}: tokens {'identical' if same else 'DIFFER'}, log-prob max diff {diff:.2e} ({stopped} of 8 rows stopped early)"
            )
    decode_step.BUCKET = bucket
    capture_failed = "CUDA graph capture of the decode step failed" in "".join(tee.text)
    if capture_failed:
        log("the CUDA graph was not captured: the cases above ran the static step without it")
    return {
        "mode": fast,
        "passed": ok and not capture_failed,
        "captureFailed": capture_failed,
        "bucket": 8,
        "cases": cases,
        "peakMemoryBytes": torch.cuda.max_memory_allocated(dev) if cuda else None,
        "note": None
        if cuda
        else "no CUDA: the static decode step (what the CUDA graph captures) against eager, float32 only",
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    stage = argv[0] if argv else ""
    if stage == "versions":
        out = versions()
    elif stage == "decode":
        out = decode()
    elif stage == "fsdp":
        from .check_fsdp import fsdp

        out = fsdp()
    elif stage == "vision":
        from .check_vision import vision

        out = vision()
    else:
        print(f"error: unknown check stage `{stage}`; use versions, decode, fsdp or vision", file=sys.stderr)
        return 2
    with contextlib.redirect_stdout(sys.__stdout__):
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
