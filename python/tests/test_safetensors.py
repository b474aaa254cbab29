"""safetensors_io.py and safetensors_header.py: the writer read back by the format's description (tiny.read_st), the
reader fed files written by hand, sharding with its index, and each header check refusing a damaged file by name."""

import json
import os
import struct

import pytest
import tiny
import torch
from ragen_torch.safetensors_header import MAX_HEADER_BYTES
from ragen_torch.safetensors_io import (
    CheckpointError,
    load_weight_files,
    read_safetensors,
    save_weights,
    write_safetensors,
)


def tensors():
    g = torch.Generator().manual_seed(0)
    return {
        "f32": torch.randn(3, 4, generator=g),
        "f64": torch.randn(5, generator=g, dtype=torch.float64),
        "f16": torch.randn(2, 2, generator=g).half(),
        "bf16": torch.randn(2, 3, generator=g).bfloat16(),
        "i64": torch.tensor([[-(2**40), 7]]),
        "i32": torch.tensor([-5, 0, 2**30], dtype=torch.int32),
        "empty": torch.zeros(0, 4),
        "scalar": torch.tensor(2.5),
    }


def test_the_writer_follows_the_format_byte_for_byte(tmp_path):
    path = str(tmp_path / "a.safetensors")
    t = tensors()
    write_safetensors(path, t, metadata={"step": 3})
    got, header = tiny.read_st(path)
    assert header["__metadata__"] == {"step": "3"}  # metadata values are strings in the format
    for name, want in t.items():
        assert header[name]["shape"] == list(want.shape), name
        torch.testing.assert_close(got[name], want.double(), atol=0, rtol=0, msg=name)
    (n,) = struct.unpack("<Q", open(path, "rb").read(8))
    assert n % 8 == 0  # the data section starts 8-byte aligned, as the reference writer pads it
    names = ("f32", "f64", "f16", "bf16", "i64", "i32")
    assert [header[k]["dtype"] for k in names] == ["F32", "F64", "F16", "BF16", "I64", "I32"]


def test_a_written_file_reads_back_with_dtypes_values_and_metadata(tmp_path):
    path = str(tmp_path / "a.safetensors")
    t = tensors()
    write_safetensors(path, t, metadata={"note": "x"})
    got, meta = read_safetensors(path)
    assert meta == {"note": "x"} and got.keys() == t.keys()
    for name, want in t.items():
        assert got[name].dtype == want.dtype, name
        assert torch.equal(got[name], want), name
    only, _ = read_safetensors(path, only=lambda name: name.startswith("f"))
    assert sorted(only) == ["f16", "f32", "f64"]


def test_a_file_written_by_hand_reads_back(tmp_path):
    path = str(tmp_path / "h.safetensors")
    want = {"w": torch.arange(6.0).reshape(2, 3) / 7, "b": torch.tensor([-1.5])}
    tiny.write_st(path, want, metadata={"format": "pt"})
    got, meta = read_safetensors(path)
    assert meta == {"format": "pt"}
    for name in want:
        torch.testing.assert_close(got[name], want[name], atol=0, rtol=0)


def test_writing_with_a_dtype_casts_each_tensor(tmp_path):
    path = str(tmp_path / "c.safetensors")
    w = torch.tensor([1.0 + 2**-10, -3.0, 1e-3])
    write_safetensors(path, {"w": w}, dtype=torch.bfloat16)
    got, _ = read_safetensors(path)
    assert got["w"].dtype == torch.bfloat16
    assert got["w"].float().tolist() == [1.0, -3.0, 0.00099945068359375]  # bf16 keeps 8 significant bits


def test_save_weights_shards_past_the_limit_and_loads_back_whole(tmp_path):
    d = str(tmp_path)
    w = {f"t{i}": torch.full((10,), float(i)) for i in range(5)}  # 40 bytes each
    files = save_weights(d, w, max_shard_bytes=100)  # two per shard
    assert files == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)] + ["model.safetensors.index.json"]
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    assert index["metadata"]["total_size"] == 5 * 40
    assert index["weight_map"] == {"t0": files[0], "t1": files[0], "t2": files[1], "t3": files[1], "t4": files[2]}
    got, _, where = load_weight_files(d)
    assert where.endswith(".index.json") and sorted(got) == sorted(w)
    for k in w:
        assert torch.equal(got[k], w[k])
    save_weights(d, w)  # one file now: the stale index must not outlive it
    assert not os.path.exists(os.path.join(d, "model.safetensors.index.json"))
    assert load_weight_files(d)[2].endswith("model.safetensors")


def test_an_index_naming_a_tensor_its_shard_lacks_is_refused(tmp_path):
    d = str(tmp_path)
    tiny.write_st(os.path.join(d, "s1.safetensors"), {"a": torch.ones(2)})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}}, f)
    with pytest.raises(CheckpointError, match="maps `b` to s1.safetensors, but that shard does not hold it"):
        load_weight_files(d)
    with pytest.raises(CheckpointError, match="expected model.safetensors or model.safetensors.index.json"):
        load_weight_files(str(tmp_path / "empty"))


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize(
    "header, data, fragment",
    [
        ([1, 2], b"", "not a JSON object of tensors"),
        ({"w": [0, 8]}, bytes(8), "tensor `w` has header entry [0, 8]"),
        ({"w": {"dtype": "F32", "shape": [2]}}, bytes(8), "tensor `w` has no `data_offsets`"),
        ({"w": dict(F32_2, shape=[2, -1])}, bytes(8), "`shape` = [2, -1]"),
        ({"w": dict(F32_2, shape=[True, 2])}, bytes(8), "`shape` = [true, 2]"),
        ({"w": dict(F32_2, data_offsets=[0, 8, 9])}, bytes(8), "`data_offsets` = [0, 8, 9]"),
        ({"w": dict(F32_2, dtype="F8")}, bytes(8), 'unknown dtype "F8"'),
        ({"w": dict(F32_2, dtype="I8", data_offsets=[0, 2])}, bytes(2), "tensor `w` has dtype I8; supported"),
        ({"w": dict(F32_2, data_offsets=[0, 12])}, bytes(12), "spans 12 bytes but shape [2] of F32 needs 8"),
        ({"w": F32_2}, bytes(4), "tensor `w` ends at byte 8 of a 4-byte data section"),
        ({"w": F32_2, "v": dict(F32_2, data_offsets=[4, 12])}, bytes(12), "overlap tensor `w`'s [0, 8]"),
        ({"w": dict(F32_2, data_offsets=[4, 12])}, bytes(12), "bytes [0, 4) of the data section belong to no tensor"),
        ({"w": F32_2}, bytes(12), "4 trailing bytes after the last tensor"),
        ({"__metadata__": {"step": 3}, "w": F32_2}, bytes(8), '`__metadata__` = {"step": 3}'),
        (b"{not json", b"", "unreadable safetensors header"),
    ],
)
def test_a_damaged_header_is_refused_naming_the_file_and_field(tmp_path, header, data, fragment):
    path = str(tmp_path / "bad.safetensors")
    tiny.raw_header(path, header, data)
    with pytest.raises(CheckpointError) as e:
        read_safetensors(path)
    assert fragment in str(e.value) and path in str(e.value)


def test_a_header_length_past_the_file_or_the_limit_is_refused(tmp_path):
    path = str(tmp_path / "bad.safetensors")
    tiny.raw_header(path, {"w": F32_2}, bytes(8), length=10_000)
    with pytest.raises(CheckpointError, match="truncated safetensors file"):
        read_safetensors(path)
    tiny.raw_header(path, {"w": F32_2}, bytes(8), length=MAX_HEADER_BYTES + 1)
    with pytest.raises(CheckpointError, match="over the 100000000-byte limit"):
        read_safetensors(path)
    open(path, "wb").write(b"\x01\x02")
    with pytest.raises(CheckpointError, match=r"not a safetensors file \(2 bytes\)"):
        read_safetensors(path)
    with pytest.raises(CheckpointError, match="safetensors file not found"):
        read_safetensors(str(tmp_path / "missing.safetensors"))


def test_a_null_metadata_and_an_empty_tensor_are_valid(tmp_path):
    path = str(tmp_path / "ok.safetensors")
    empty = {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}
    tiny.raw_header(path, {"__metadata__": None, "e": empty, "w": F32_2}, struct.pack("<2f", 1.5, -2))
    got, meta = read_safetensors(path)
    assert meta == {} and got["e"].shape == (0, 3) and got["w"].tolist() == [1.5, -2.0]
