"""Reading and writing safetensors files and Hugging Face checkpoint directories with torch alone.

The format: u64 little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, the raw data.
Uses the `safetensors` package only for nothing: the format is small enough to read directly; headers are checked
as network input (safetensors_header.py).
"""

import ctypes
import json
import os
import struct

import torch

from .safetensors_header import CheckpointError, check_header, check_header_length

DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
    "I32": torch.int32,
    "I64": torch.int64,
}
NAMES = {v: k for k, v in DTYPES.items()}


DEFAULT_MAX_SHARD_BYTES = 1 << 30  # well under 2 GiB, as src/model/safetensors.ts
_PIECE = 256 << 20  # bytes per read/write call: memory stays at one tensor, never a whole file


def _tensor_view(t):
    """A contiguous CPU tensor's bytes as a writable memoryview, without a copy (no numpy needed)."""
    n = t.numel() * t.element_size()
    return memoryview((ctypes.c_ubyte * n).from_address(t.data_ptr())).cast("B")


def tensor_bytes(t):
    """Raw bytes of a contiguous CPU tensor (a copy; small tensors only)."""
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def _read_exact(f, view, path):
    done = 0
    while done < len(view):
        n = f.readinto(view[done : done + _PIECE])
        if not n:
            raise CheckpointError(
                f"{path}: truncated safetensors file (ended {len(view) - done} bytes before a tensor's end)"
            )
        done += n


def read_safetensors(path, only=None):
    """Tensors of one file by name (dtype as stored), and the header's __metadata__. Read by parts (the length, the
    header, then each tensor at its offset) so files of any size load; `only(name)` picks the tensors to read."""
    if not os.path.exists(path):
        raise CheckpointError(f"safetensors file not found: {path}")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        if size < 8:
            raise CheckpointError(f"{path}: not a safetensors file ({size} bytes)")
        (n,) = struct.unpack("<Q", f.read(8))
        check_header_length(n, size, path)
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise CheckpointError(f"{path}: unreadable safetensors header ({e})") from e
        start = 8 + n
        entries, metadata = check_header(header, size - start, path, list(DTYPES))
        out = {}
        for name, dtype, shape, a, b in entries:
            if only is not None and not only(name):
                continue
            t = torch.empty(shape, dtype=DTYPES[dtype])
            if b > a:
                f.seek(start + a)
                _read_exact(f, _tensor_view(t), path)
            out[name] = t
    return out, metadata


def write_safetensors(path, tensors, metadata=None, dtype=None):
    """Write tensors (each moved to contiguous CPU, and cast to `dtype` if given, as it is written) with an optional
    string metadata dict: the header first, then tensor by tensor, so no copy of the whole file or of the whole
    model in another dtype is ever in memory."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        out = dtype or t.dtype
        nbytes = t.numel() * torch.empty((), dtype=out).element_size()
        header[name] = {"dtype": NAMES[out], "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for t in tensors.values():
            if t.numel() == 0:
                continue
            t = t.detach().to("cpu", dtype or t.dtype).contiguous()
            view = _tensor_view(t)
            for i in range(0, len(view), _PIECE):
                f.write(view[i : i + _PIECE])
    os.replace(tmp, path)


def load_weight_files(directory, file="model.safetensors"):
    """(weights, metadata, path) of `directory/file` or of the shards of `file.index.json` (metadata of the first
    shard: save_weights writes the same metadata into each)."""
    single = os.path.join(directory, file)
    if os.path.exists(single):
        w, meta = read_safetensors(single)
        return w, meta, single
    index = single + ".index.json"
    if not os.path.exists(index):
        raise CheckpointError(
            f"no weights in {directory}: expected {file} or {file}.index.json (only safetensors checkpoints are supported)"
        )
    with open(index) as f:
        weight_map = json.load(f).get("weight_map")
    if not weight_map:
        raise CheckpointError(f'{index}: missing "weight_map"')
    out, meta = {}, None
    for shard in dict.fromkeys(weight_map.values()):
        w, m = read_safetensors(os.path.join(directory, shard))
        out.update(w)
        meta = m if meta is None else meta
    for name, shard in weight_map.items():
        if name not in out:
            raise CheckpointError(f"{index} maps `{name}` to {shard}, but that shard does not hold it")
    return out, meta or {}, index


def load_weights(directory, file="model.safetensors"):
    """All weights of a checkpoint directory: `model.safetensors` or the shards of its index."""
    return load_weight_files(directory, file)[0]


def save_weights(directory, tensors, max_shard_bytes=None, file="model.safetensors", metadata=None, dtype=None):
    """`file`, or shards `<stem>-0000i-of-0000n.safetensors` + `file.index.json` (Hugging Face's layout:
    metadata.total_size, weight_map) past max_shard_bytes of data (default 1 GiB); `metadata` goes into each file;
    tensors are cast to `dtype` (if given) one at a time as they are written."""
    max_shard_bytes = max_shard_bytes or DEFAULT_MAX_SHARD_BYTES
    os.makedirs(directory, exist_ok=True)
    shards, size = [{}], 0
    size_of = torch.empty((), dtype=dtype).element_size() if dtype else None
    for name, t in tensors.items():
        nbytes = t.numel() * (size_of or t.element_size())
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += nbytes
    index = os.path.join(directory, file + ".index.json")
    if len(shards) == 1:
        write_safetensors(os.path.join(directory, file), shards[0], metadata, dtype)
        if os.path.exists(index):  # a stale index of an older sharded save here
            os.remove(index)
        return [file]
    if os.path.exists(
        os.path.join(directory, file)
    ):  # loaders prefer the single file: an older one must not shadow the shards
        os.remove(os.path.join(directory, file))
    stem = file[: -len(".safetensors")]
    n = len(shards)
    weight_map, total, names = {}, 0, []
    for i, shard in enumerate(shards):
        name = f"{stem}-{i + 1:05d}-of-{n:05d}.safetensors"
        write_safetensors(os.path.join(directory, name), shard, metadata, dtype)
        names.append(name)
        for k, t in shard.items():
            weight_map[k] = name
            total += t.numel() * (size_of or t.element_size())
    with open(index, "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    return names + [file + ".index.json"]
