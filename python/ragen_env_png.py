"""Images for the env wire (standard library only): an observation image as ``{width, height, format: "png", data}``
with ``data`` a base64 8-bit RGB PNG, as `ragen env serve` sends them (src/env/remote/wire-image.ts).
"""

import base64
import struct
import zlib

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def rgb_of(image):
    """``(width, height, rgb_bytes)`` of an image given as a (height, width, 3) uint8 array (numpy or anything with
    ``shape`` and ``tobytes``), a Pillow image (converted to RGB), or a ``(width, height, bytes)`` tuple."""
    if isinstance(image, tuple) and len(image) == 3:
        width, height, data = image
        data = bytes(data)
    elif hasattr(image, "convert") and hasattr(image, "size"):  # Pillow
        rgb = image.convert("RGB")
        (width, height), data = rgb.size, rgb.tobytes()
    elif hasattr(image, "shape") and hasattr(image, "tobytes"):
        shape = tuple(image.shape)
        dtype = str(getattr(image, "dtype", "uint8"))
        if len(shape) != 3 or shape[2] != 3 or dtype != "uint8":
            raise ValueError(f"an image array must be (height, width, 3) uint8 RGB, got shape {shape} of {dtype}")
        height, width = shape[0], shape[1]
        data = image.tobytes()  # C order: rows from the top, RGB per pixel
    else:
        raise TypeError(
            f"an image must be a (height, width, 3) uint8 array, a Pillow image or (width, height, bytes); got {type(image).__name__}"
        )
    if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
        raise ValueError(f"an image must have positive integer width and height, got {width!r}x{height!r}")
    if len(data) != width * height * 3:
        raise ValueError(f"a {width}x{height} RGB image needs {width * height * 3} bytes, got {len(data)}")
    return width, height, data


def encode_png(width, height, rgb):
    """An 8-bit RGB PNG of ``width * height * 3`` bytes of pixels (every row filter 0)."""
    stride = width * 3
    raw = b"".join(b"\x00" + rgb[y * stride : (y + 1) * stride] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def to_wire(image):
    """One observation image as the wire carries it."""
    width, height, data = rgb_of(image)
    return {
        "width": width,
        "height": height,
        "format": "png",
        "data": base64.b64encode(encode_png(width, height, data)).decode("ascii"),
    }
