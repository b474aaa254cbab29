"""ragen_env_png.py, the env bridge's images: its PNGs read back by Pillow pixel for pixel, the image forms it takes,
and the sentences for the ones it refuses."""

import base64
import io
import random

import pytest
from ragen_env_png import encode_png, rgb_of, to_wire

Image = pytest.importorskip("PIL.Image")


def _noise(width, height, seed):
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(width * height * 3))


def test_pillow_reads_our_png_as_the_pixels_we_wrote():
    for width, height in [(1, 1), (7, 5), (40, 12)]:
        rgb = _noise(width, height, width)
        image = Image.open(io.BytesIO(encode_png(width, height, rgb)))
        assert image.mode == "RGB" and image.size == (width, height)
        assert image.tobytes() == rgb


def test_a_wire_image_is_a_base64_png_with_its_size():
    wire = to_wire((3, 2, _noise(3, 2, 1)))
    assert {k: wire[k] for k in ("width", "height", "format")} == {"width": 3, "height": 2, "format": "png"}
    assert Image.open(io.BytesIO(base64.b64decode(wire["data"]))).tobytes() == _noise(3, 2, 1)


def test_arrays_and_pillow_images_are_read_as_rows_of_rgb():
    numpy = pytest.importorskip("numpy")
    array = numpy.arange(2 * 3 * 3, dtype=numpy.uint8).reshape(2, 3, 3)  # (height, width, 3)
    assert rgb_of(array) == (3, 2, bytes(range(18)))
    rgba = Image.frombytes("RGBA", (2, 1), bytes([1, 2, 3, 9, 4, 5, 6, 9]))
    assert rgb_of(rgba) == (2, 1, bytes([1, 2, 3, 4, 5, 6]))
    with pytest.raises(ValueError, match=r"\(height, width, 3\) uint8 RGB, got shape \(2, 3\)"):
        rgb_of(numpy.zeros((2, 3), dtype=numpy.uint8))
    with pytest.raises(ValueError, match="of float32"):
        rgb_of(numpy.zeros((2, 3, 3), dtype=numpy.float32))


def test_a_wrong_byte_count_or_type_is_refused_with_the_numbers():
    with pytest.raises(ValueError, match="a 2x2 RGB image needs 12 bytes, got 11"):
        rgb_of((2, 2, bytes(11)))
    with pytest.raises(TypeError, match="got str"):
        rgb_of("not an image")
