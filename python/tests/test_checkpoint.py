"""checkpoint.py's LoRA checkpoints through the worker's save op: adapter-only over a frozen base read from a directory
(adapter/ naming the base, no model.safetensors), as src/model/checkpoint.ts writes them; resumed runs name the original
base, stale weights never shadow it, and a base that trains is written whole."""

import json
import os

import pytest
import tiny
import torch
from ragen_torch.safetensors_io import CheckpointError
from test_worker import LORA, forward, train_step

WEIGHTS = ("model.safetensors", "model.safetensors.index.json")


def adapter_base(directory):
    with open(os.path.join(directory, "adapter", "adapter_config.json")) as f:
        return json.load(f)["base_model_name_or_path"]


def test_a_lora_checkpoint_resumes_exactly_and_its_resave_names_the_original_base(checkpoint, make_worker, tmp_path):
    path, _, _ = checkpoint
    a, _ = make_worker(path, lora=LORA)
    train_step(a)
    step1 = str(tmp_path / "step-1")
    a.handle("save", {"dir": step1, "optimizer": True}, {})
    assert not any(os.path.exists(os.path.join(step1, f)) for f in WEIGHTS)
    assert adapter_base(step1) == os.path.abspath(path)

    b, reply = make_worker(step1, lora=LORA)
    assert reply["lora"] is True
    b.handle("load_optimizer", {"dir": step1}, {})
    train_step(a)
    train_step(b)
    pa, pb = a.handle("tensors", {"role": "policy"}, {})[1], b.handle("tensors", {"role": "policy"}, {})[1]
    assert sorted(pa) == sorted(pb)
    for k in pa:
        torch.testing.assert_close(pb[k], pa[k], atol=1e-6, rtol=0, msg=k)

    step2 = str(tmp_path / "step-2")
    b.handle("save", {"dir": step2}, {})
    assert adapter_base(step2) == os.path.abspath(path)  # not step-1's: pruning old checkpoints keeps step-2 whole
    os.rename(step1, step1 + "-pruned")
    torch.testing.assert_close(forward(make_worker(step2)[0])["logprobs"], forward(b)["logprobs"], atol=0, rtol=0)

    os.rename(path, path + "-moved")
    with pytest.raises(CheckpointError, match="put the base model back there") as e:
        make_worker(step2)
    assert os.path.abspath(path) in str(e.value)


def test_weights_of_an_earlier_save_in_the_directory_are_removed_not_read(checkpoint, make_worker, tmp_path):
    path, _, _ = checkpoint
    out = str(tmp_path / "saved")
    full, _ = make_worker(path)
    train_step(full)  # different weights from the base's, which a stale model.safetensors would shadow it with
    full.handle("save", {"dir": out}, {})
    assert os.path.exists(os.path.join(out, "model.safetensors"))
    lora, _ = make_worker(path, lora=LORA)
    train_step(lora)
    lora.handle("save", {"dir": out}, {})
    assert not any(os.path.exists(os.path.join(out, f)) for f in WEIGHTS)
    torch.testing.assert_close(forward(make_worker(out)[0])["logprobs"], forward(lora)["logprobs"], atol=0, rtol=0)


def test_saving_into_the_base_under_another_name_keeps_its_weights(checkpoint, make_worker, tmp_path):
    path, _, w = checkpoint
    link = str(tmp_path / "link")
    os.symlink(path, link)
    worker, _ = make_worker(path, lora=LORA)
    worker.handle("save", {"dir": link}, {})
    saved, _ = tiny.read_st(os.path.join(path, "model.safetensors"))
    for k in w:
        torch.testing.assert_close(saved[k].float(), w[k], atol=0, rtol=0, msg=k)


def test_a_lora_model_whose_base_trains_is_written_whole(checkpoint, make_worker, tmp_path):
    # (a training vision tower is base that changes; here a norm stands in for it)
    path, _, w = checkpoint
    worker, _ = make_worker(path, lora=LORA)
    norm = worker.roles.policy.model.norm.weight
    norm.requires_grad_(True)
    with torch.no_grad():
        norm.add_(0.5)
    out = str(tmp_path / "saved")
    worker.handle("save", {"dir": out}, {})
    saved, _ = tiny.read_st(os.path.join(out, "model.safetensors"))
    torch.testing.assert_close(saved["model.norm.weight"].float(), w["model.norm.weight"] + 0.5, atol=1e-6, rtol=0)
    assert adapter_base(out) == ".."
    torch.testing.assert_close(forward(make_worker(out)[0])["logprobs"], forward(worker)["logprobs"], atol=0, rtol=0)
