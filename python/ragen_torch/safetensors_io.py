"""Reading and writing safetensors files and Hugging Face checkpoint directories with torch alone.

The format: u64 little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, the raw data.
Uses the `safetensors` package only for nothing: the format is small enough to read directly.
"""
import ctypes
import json
import os
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64, "I32": torch.int32, "I64": torch.int64}
NAMES = {v: k for k, v in DTYPES.items()}


class CheckpointError(Exception):
    """A checkpoint file is missing or malformed."""


def tensor_bytes(t):
    """Raw bytes of a contiguous CPU tensor (no numpy needed)."""
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def read_safetensors(path):
    """Tensors of one file by name (dtype as stored), and the header's __metadata__."""
    if not os.path.exists(path):
        raise CheckpointError(f"safetensors file not found: {path}")
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise CheckpointError(f"{path}: not a safetensors file ({len(raw)} bytes)")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8 : 8 + n])
    except ValueError as e:
        raise CheckpointError(f"{path}: unreadable safetensors header ({e})")
    body = memoryview(raw)[8 + n :]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if e["dtype"] not in DTYPES:
            raise CheckpointError(f"{path}: tensor {name} has dtype {e['dtype']}; supported: {', '.join(DTYPES)}")
        a, b = e["data_offsets"]
        dtype = DTYPES[e["dtype"]]
        t = torch.frombuffer(bytearray(body[a:b]), dtype=dtype) if b > a else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"])
    return out, header.get("__metadata__", {}) or {}


def write_safetensors(path, tensors, metadata=None):
    """Write tensors (converted to contiguous CPU, dtype kept) with an optional string metadata dict."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        data = tensor_bytes(t) if t.numel() > 0 else b""
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def load_weights(directory, file="model.safetensors"):
    """All weights of a checkpoint directory: `model.safetensors` or the shards of its index."""
    single = os.path.join(directory, file)
    if os.path.exists(single):
        return read_safetensors(single)[0]
    index = single + ".index.json"
    if not os.path.exists(index):
        raise CheckpointError(f"no weights in {directory}: expected {file} or {file}.index.json (only safetensors checkpoints are supported)")
    with open(index) as f:
        weight_map = json.load(f).get("weight_map")
    if not weight_map:
        raise CheckpointError(f'{index}: missing "weight_map"')
    out = {}
    for shard in dict.fromkeys(weight_map.values()):
        out.update(read_safetensors(os.path.join(directory, shard))[0])
    for name, shard in weight_map.items():
        if name not in out:
            raise CheckpointError(f"{index} maps `{name}` to {shard}, but that shard does not hold it")
    return out


def save_weights(directory, tensors, max_shard_bytes=2 << 30, file="model.safetensors"):
    """`model.safetensors`, or shards `model-0000i-of-0000n.safetensors` + index when larger than max_shard_bytes."""
    shards, size = [{}], 0
    for name, t in tensors.items():
        nbytes = t.numel() * t.element_size()
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += nbytes
    if len(shards) == 1:
        write_safetensors(os.path.join(directory, file), shards[0])
        return
    stem = file[: -len(".safetensors")]
    n = len(shards)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        name = f"{stem}-{i + 1:05d}-of-{n:05d}.safetensors"
        write_safetensors(os.path.join(directory, name), shard)
        for k, t in shard.items():
            weight_map[k] = name
            total += t.numel() * t.element_size()
    with open(os.path.join(directory, file + ".index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
