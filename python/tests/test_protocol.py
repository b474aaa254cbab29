"""protocol.py (the frames the worker reads and writes) and token_stats.py (chunked log-probs and entropy)."""

import io
import json
import struct
import warnings

import pytest
import torch
from ragen_torch.protocol import ProtocolError, read_frame, write_frame
from ragen_torch.token_stats import _autocast_dtype, plain_token_stats, token_stats


def test_a_frame_is_magic_lengths_json_then_raw_little_endian_buffers():
    f = io.BytesIO()
    bufs = {"ids": torch.tensor([[1, -2]], dtype=torch.int32), "w": torch.tensor([0.5])}
    write_frame(f, {"id": 3, "op": "forward"}, bufs)
    blob = f.getvalue()
    magic, hlen, blen = struct.unpack("<4sIQ", blob[:16])
    header = json.loads(blob[16 : 16 + hlen])
    assert magic == b"RGT1" and blen == 8 + 4
    buffers = [{"name": "ids", "dtype": "i32", "shape": [1, 2]}, {"name": "w", "dtype": "f32", "shape": [1]}]
    assert header == {"id": 3, "op": "forward", "buffers": buffers}
    assert blob[16 + hlen :] == struct.pack("<2if", 1, -2, 0.5)
    h, bufs = read_frame(io.BytesIO(blob))
    assert h == {"id": 3, "op": "forward"} and bufs["ids"].tolist() == [[1, -2]] and bufs["w"].tolist() == [0.5]
    assert read_frame(io.BytesIO(b"")) is None  # end of input


def test_a_bad_magic_or_a_nan_in_a_header_is_refused():
    with pytest.raises(ProtocolError, match="bad frame magic b'XXXX'"):
        read_frame(io.BytesIO(struct.pack("<4sIQ", b"XXXX", 2, 0) + b"{}"))
    with pytest.raises(ValueError):
        write_frame(io.BytesIO(), {"gradNorm": float("nan")})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_chunked_token_stats_equal_the_whole_logits_computation_in_value_and_gradient(dtype):
    g = torch.Generator().manual_seed(0)
    h = torch.randn(7, 5, generator=g, dtype=dtype).requires_grad_(True)
    w = torch.randn(11, 5, generator=g, dtype=dtype).requires_grad_(True)
    targets = torch.randint(0, 11, (7,), generator=g)
    gl, ge = torch.randn(7, generator=g), torch.randn(7, generator=g)
    # by hand: log p = z_t - logsumexp(z), H = -sum p log p
    z = (h @ w.t()).double()
    lp_hand = z.gather(-1, targets[:, None]).squeeze(-1) - z.logsumexp(-1)
    p = z.softmax(-1)
    ent_hand = -(p * p.log()).sum(-1)
    results = []
    two_rows = 3 * 4 * 11 * 2  # bytes of scratch for two rows of 11 logits: four chunks
    for fn in (lambda: plain_token_stats(h, w, targets), lambda: token_stats(h, w, targets, chunk_bytes=two_rows)):
        lp, ent = fn()
        torch.testing.assert_close(lp.double(), lp_hand, atol=1e-5, rtol=0)
        torch.testing.assert_close(ent.double(), ent_hand, atol=1e-5, rtol=0)
        dh, dw = torch.autograd.grad((lp * gl).sum() + (ent * ge).sum(), (h, w))
        results.append((dh, dw))
    for a, b in zip(*results):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)


def test_suppressed_ids_leave_the_distribution_in_value_and_gradient():
    """A VLM's vision tokens: log-probs and entropy of the softmax over the other ids (by hand: the logits without
    those columns), a suppressed target's log-prob 0 with no gradient; chunked equals plain."""
    g = torch.Generator().manual_seed(1)
    h = torch.randn(7, 5, generator=g, dtype=torch.float64).requires_grad_(True)
    w = torch.randn(11, 5, generator=g, dtype=torch.float64).requires_grad_(True)
    off = [2, 7]
    targets = torch.tensor([0, 1, 2, 3, 7, 9, 10])
    kept = torch.tensor([i for i in range(11) if i not in off])
    z = (h @ w.t()).double()[:, kept]  # the distribution over the other 9 ids
    where = {int(t): j for j, t in enumerate(kept)}
    sampled = torch.tensor([int(t) not in off for t in targets])
    lp_hand = torch.where(
        sampled,
        z.gather(-1, torch.tensor([[where.get(int(t), 0)] for t in targets])).squeeze(-1) - z.logsumexp(-1),
        torch.zeros(7, dtype=torch.float64),
    )
    ent_hand = -(z.softmax(-1) * z.log_softmax(-1)).sum(-1)
    gl, ge = torch.randn(7, generator=g), torch.randn(7, generator=g)
    results = []
    for fn in (
        lambda: plain_token_stats(h, w, targets, suppressed=off),
        lambda: token_stats(h, w, targets, chunk_bytes=3 * 4 * 11 * 2, suppressed=off),
    ):
        lp, ent = fn()
        torch.testing.assert_close(lp.double(), lp_hand, atol=1e-5, rtol=0)
        torch.testing.assert_close(ent.double(), ent_hand, atol=1e-5, rtol=0)
        results.append(torch.autograd.grad((lp * gl).sum() + (ent * ge).sum(), (h, w)))
    want = torch.autograd.grad((lp_hand * gl.double()).sum() + (ent_hand * ge.double()).sum(), (h, w))
    for got in results:
        for a, b in zip(got, want):
            torch.testing.assert_close(a.double(), b, atol=1e-4, rtol=1e-4)


def test_token_stats_read_the_cpu_autocast_dtype_without_deprecated_calls():
    """torch 2.4 deprecates is_autocast_cpu_enabled / get_autocast_cpu_dtype (a warning per call on 2.13): the device-type
    calls are used where torch has them. (torch may warn once per process: this fails when it runs first.)"""
    cpu = torch.device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert _autocast_dtype(cpu) == torch.bfloat16
        assert _autocast_dtype(cpu) is None
