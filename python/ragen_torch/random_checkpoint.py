"""Random-weight Hugging Face checkpoints of named Qwen shapes (for `ragen bench gpu` and tests): config.json in
Hugging Face's layout plus safetensors written by our own writer, so transformers and the worker both load it.
"""

import json
import os

import torch

from .model import config_from_raw, make_decoder
from .safetensors_io import save_weights


def _read_shapes():
    """shapes.json beside this file (the table `ragen model init` reads too): each shape's family keys overlaid with its own,
    aliases included."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes.json")) as f:
        table = json.load(f)
    shapes = {}
    for name, entry in table["shapes"].items():
        own = {k: v for k, v in entry.items() if k != "family"}
        shapes[name] = dict(table["families"][entry["family"]], **own)
    for alias, target in table["aliases"].items():
        shapes[alias] = shapes[target]
    return shapes


# The published Qwen2.5 / Qwen3 configurations and a tiny one of each family (shapes.json), plus `tiny`: the worker's
# own CPU test shape (a 256-token vocabulary, no tokenizer; not a published family, so `ragen model init` has none).
SHAPES = dict(_read_shapes(), tiny=dict(_read_shapes()["qwen2.5-tiny"], vocab_size=256, bos_token_id=1, eos_token_id=2))


def write_random_checkpoint(directory, shape, seed=0, dtype=torch.bfloat16, device="cpu"):
    """Write `shape` (a SHAPES key) with weights N(0, 0.02), norms 1, biases 0; returns the directory. `device`: where
    the numbers are drawn (a GPU draws a 7B shape in a second; its numbers differ from the CPU's for the same seed)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown model shape `{shape}`; known: {', '.join(SHAPES)}")
    return write_random_weights(directory, SHAPES[shape], seed, dtype, device)


def write_random_weights(directory, raw, seed=0, dtype=torch.bfloat16, device="cpu"):
    """config.json (`raw`), generation_config.json and random weights of any config the worker loads (text or
    vision-language) in `directory`."""
    raw = dict(raw, torch_dtype={torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype])
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(raw, f, indent=2)
    with open(os.path.join(directory, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": raw["bos_token_id"], "eos_token_id": raw["eos_token_id"]}, f, indent=2)
    with torch.device("meta") if hasattr(torch.device, "__enter__") else _cpu():  # torch >= 2: shapes only
        names = {k: tuple(v.shape) for k, v in make_decoder(config_from_raw(raw)).base_state().items()}
    gen = torch.Generator(device=device).manual_seed(seed)
    weights = {}
    for name, shape_ in names.items():
        if name.endswith(("norm.weight", "norm1.weight", "norm2.weight", "ln_q.weight")):  # RMSNorm gains (vision too)
            t = torch.ones(shape_)
        elif name.endswith(".bias"):
            t = torch.zeros(shape_)
        else:
            t = (torch.randn(shape_, generator=gen, device=device) * 0.02).to(dtype).cpu()
        weights[name] = t.to(dtype)
    save_weights(directory, weights)
    return directory


class _cpu:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main(argv=None):
    """python -m ragen_torch.random_checkpoint SHAPE DIR: replace DIR's weights and config by SHAPE's random ones, keeping
    its tokenizer files; drawn on the GPU when torch sees one (seconds for a 7B shape, where `ragen model init` streams
    them from Node for minutes)."""
    import glob
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in SHAPES:
        print(
            f"usage: python -m ragen_torch.random_checkpoint SHAPE DIR (SHAPE one of {', '.join(SHAPES)})",
            file=sys.stderr,
        )
        return 2
    for old in glob.glob(os.path.join(argv[1], "model*.safetensors*")):
        os.remove(old)
    write_random_checkpoint(argv[1], argv[0], device="cuda" if torch.cuda.is_available() else "cpu")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
