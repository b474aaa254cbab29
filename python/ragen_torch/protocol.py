"""Frames of the worker protocol (src/engine/torch-protocol.ts is the other side). A frame: magic `RGT1`, u32 header
length, u64 body length (little-endian), a UTF-8 JSON header, the body. The header's `buffers` lists the arrays the
body holds, in order: {name, dtype ('i32' | 'f32' | 'u8'), shape}; each is raw little-endian data.
"""

import json
import struct

import torch

from .safetensors_io import tensor_bytes

MAGIC = b"RGT1"
PREFIX = struct.Struct("<4sIQ")
DTYPES = {"i32": torch.int32, "f32": torch.float32, "u8": torch.uint8}
NAMES = {v: k for k, v in DTYPES.items()}


class ProtocolError(Exception):
    pass


def _read_exact(f, n):
    data = f.read(n)
    if data is None or len(data) < n:
        return None
    return data


def read_frame(f):
    """(header dict, {name: tensor}) of the next frame, or None at end of input."""
    prefix = _read_exact(f, PREFIX.size)
    if prefix is None:
        return None
    magic, hlen, blen = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ProtocolError(f"bad frame magic {magic!r} (expected {MAGIC!r})")
    header = json.loads(_read_exact(f, hlen) or b"{}")
    body = _read_exact(f, blen) if blen else b""
    if body is None:
        return None
    bufs, off = {}, 0
    for b in header.pop("buffers", []):
        dtype = DTYPES[b["dtype"]]
        n = 1
        for d in b["shape"]:
            n *= d
        nbytes = n * torch.empty(0, dtype=dtype).element_size()
        t = torch.frombuffer(bytearray(body[off : off + nbytes]), dtype=dtype) if n else torch.empty(0, dtype=dtype)
        bufs[b["name"]] = t.reshape(b["shape"])
        off += nbytes
    return header, bufs


def write_frame(f, header, bufs=None):
    """Write one frame: `header` (JSON; NaN/Inf are not allowed in it) and tensors by name."""
    descr, blobs = [], []
    for name, t in (bufs or {}).items():
        t = t.detach().to("cpu").contiguous()
        descr.append({"name": name, "dtype": NAMES[t.dtype], "shape": list(t.shape)})
        blobs.append(tensor_bytes(t) if t.numel() else b"")
    h = json.dumps(dict(header, buffers=descr), allow_nan=False).encode()
    body = b"".join(blobs)
    f.write(PREFIX.pack(MAGIC, len(h), len(body)) + h)
    f.write(body)
    f.flush()
