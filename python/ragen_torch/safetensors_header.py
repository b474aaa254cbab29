"""The checks of a safetensors header, as src/model/safetensors.ts makes them (no torch: the header is network input).

Every field typed (dtype a known name, shape a list of non-negative integers, data_offsets a pair of them,
__metadata__ string -> string), the header length bounded, and the tensors tiling the data section exactly.
"""

import json

MAX_HEADER_BYTES = 100_000_000  # the reference implementation's limit
ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
EXPECTED = {
    "dtype": "a dtype name (" + ", ".join(ITEM_BYTES) + ")",
    "shape": "an array of non-negative integers",
    "data_offsets": "a pair [begin, end] of non-negative integers",
}
DAMAGED = "the file is damaged or not a safetensors file"
EDITED = "the file is damaged or was edited; use an earlier checkpoint or the original file"


class CheckpointError(Exception):
    """A checkpoint file is missing or malformed."""


def _show(v):
    s = json.dumps(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _count(x):
    return type(x) is int and x >= 0  # bool is not int here


def check_header_length(n, size, path):
    """The u64 at the start of the file: under the format's limit and inside the file."""
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(
            f"{path}: the safetensors header length says {n} bytes, over the {MAX_HEADER_BYTES}-byte limit of the format: {DAMAGED}."
        )
    if 8 + n > size:
        raise CheckpointError(
            f"{path}: truncated safetensors file (header says {n} bytes of JSON, file has {size - 8} after the length)"
        )


def _typed(name, e, path):
    if not isinstance(e, dict):
        raise CheckpointError(
            f"{path}: tensor `{name}` has header entry {_show(e)}; expected an object {{dtype, shape, data_offsets}}: {DAMAGED}."
        )
    ok = {
        "dtype": lambda v: isinstance(v, str),
        "shape": lambda v: isinstance(v, list) and all(_count(d) for d in v),
        "data_offsets": lambda v: isinstance(v, list) and len(v) == 2 and all(_count(d) for d in v),
    }
    for field, good in ok.items():
        if field not in e:
            raise CheckpointError(f"{path}: tensor `{name}` has no `{field}`; expected {EXPECTED[field]}: {DAMAGED}.")
        if not good(e[field]):
            raise CheckpointError(
                f"{path}: tensor `{name}` has `{field}` = {_show(e[field])}; expected {EXPECTED[field]}: {DAMAGED}."
            )


def check_header(header, data_len, path, supported):
    """[(name, dtype, shape, begin, end)] of a parsed header over a data section of `data_len` bytes, and its
    metadata; `supported` names the dtypes the caller reads. A CheckpointError names the file, tensor and field."""
    if not isinstance(header, dict):
        raise CheckpointError(
            f"{path}: the safetensors header is {_show(header)}, not a JSON object of tensors: {DAMAGED}."
        )
    entries, metadata = [], {}
    for name, e in header.items():
        if name == "__metadata__":
            if e is not None and not (isinstance(e, dict) and all(isinstance(v, str) for v in e.values())):
                raise CheckpointError(
                    f"{path}: the header's `__metadata__` = {_show(e)} is not an object of strings to strings: {DAMAGED}."
                )
            metadata = e or {}
            continue
        _typed(name, e, path)
        dtype, shape, (a, b) = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in ITEM_BYTES:
            raise CheckpointError(
                f"{path}: tensor `{name}` has unknown dtype {_show(dtype)}; expected {EXPECTED['dtype']}."
            )
        if dtype not in supported:
            raise CheckpointError(f"{path}: tensor `{name}` has dtype {dtype}; supported: {', '.join(supported)}")
        need = ITEM_BYTES[dtype]
        for d in shape:
            need *= d
        if b - a != need:
            raise CheckpointError(
                f"{path}: tensor `{name}` spans {b - a} bytes but shape {shape} of {dtype} needs {need} (data_offsets [{a}, {b}])"
            )
        if b > data_len:
            raise CheckpointError(
                f"{path}: truncated safetensors file (tensor `{name}` ends at byte {b} of a {data_len}-byte data section)"
            )
        entries.append((name, dtype, shape, a, b))
    at, prev = 0, None
    for name, _, _, a, b in sorted(entries, key=lambda t: (t[3], t[4])):
        if a < at:
            raise CheckpointError(
                f"{path}: tensor `{name}`'s data_offsets [{a}, {b}] overlap tensor `{prev[0]}`'s [{prev[3]}, {prev[4]}]: {EDITED}."
            )
        if a > at:
            raise CheckpointError(
                f"{path}: bytes [{at}, {a}) of the data section belong to no tensor (tensor `{name}`'s data_offsets begin at {a}): {EDITED}."
            )
        at, prev = b, (name, None, None, a, b)
    if at < data_len:
        raise CheckpointError(
            f"{path}: {data_len - at} trailing bytes after the last tensor (its tensors end at byte {at} of a {data_len}-byte data section); the file is damaged or not one safetensors file: use an earlier checkpoint"
        )
    return entries, metadata
