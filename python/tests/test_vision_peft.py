"""PEFT as the reference for the worker's LoRA adapters of a vision-language model (Qwen2.5-VL, Qwen3-VL): ours save
under the keys PEFT itself writes for transformers 5's module tree (`model.language_model.layers.*`), so that
PeftModel.from_pretrained loads every one and gives our logits on image rows; a PEFT-made adapter loads in ours with
PEFT's logits; our earlier saves (the Hub layout's `model.layers.*`) still load; adapters on the tower are refused.
Skipped without transformers or PEFT unless RAGEN_REQUIRE_HF=1.
"""

import json
import os
import shutil
import warnings

import pytest
import test_vision_parity as qwen25
import test_vision_qwen3_parity as qwen3
import tiny
import torch
from ragen_torch.checkpoint import frozen_base_dir, save_model
from ragen_torch.model import load_decoder
from ragen_torch.safetensors_io import CheckpointError, read_safetensors, write_safetensors
from test_vision_parity import batched

transformers = tiny.require_hf("transformers")
peft = tiny.require_hf("peft")

CPU = torch.device("cpu")
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def qwen25_rows(proc):
    return [qwen25.row_inputs(proc, r, seed=r) for r in range(len(qwen25.ROW_IMAGES))]


def qwen3_rows(proc):
    return [qwen3.row_inputs(proc, r) for r in range(len(qwen3.ROW_IMAGES))]


FAMILIES = {
    "qwen2.5-vl": (
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen2_5_VLConfig",
        qwen25.TINY_VL,
        qwen25.processor,
        qwen25_rows,
    ),
    "qwen3-vl": (
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLConfig",
        qwen3.TINY_QWEN3_VL,
        qwen3.processor,
        qwen3_rows,
    ),
}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, tmp_path_factory):
    """(a function making transformers' model with the base weights, the rows' processor outputs, the base directory
    saved by save_pretrained)."""
    cls, cfg_cls, raw, processor, rows_of = FAMILIES[request.param]

    def hf_model():
        torch.manual_seed(3)
        hf = getattr(transformers, cls)(getattr(transformers, cfg_cls)(**raw)).float()
        for c in (hf.config, hf.model.visual.config, hf.model.language_model.config):
            c._attn_implementation = "eager"
        return hf.eval()

    directory = tmp_path_factory.mktemp(request.param)
    hf_model().save_pretrained(directory)
    return hf_model, rows_of(processor()), directory


def ours_logits(model, rows):
    ids, images = batched(rows)
    with torch.no_grad():
        _, logits = model(ids, with_logits=True, images=images)
    return [logits[b, : r["input_ids"].shape[1]] for b, r in enumerate(rows)]


def peft_logits(model, rows):
    with torch.no_grad():
        return [model(**r).logits[0] for r in rows]


def assert_close(got, want):
    for b, (a, ref) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item(), msg=f"row {b}")


def lora_model(directory, seed, targets=ALL):
    """Ours with LoRA (r 4, alpha 8) on `targets` of the language model, B drawn too (B = 0 would test nothing)."""
    model = load_decoder(str(directory), CPU)
    g = torch.Generator().manual_seed(seed)
    model.attach_lora(4, 8.0, 0.0, targets, g)
    with torch.no_grad():
        for _, _, lin in model.linears():
            if lin.lora_B is not None:
                lin.lora_B.copy_(torch.randn(lin.lora_B.shape, generator=g) * 0.1)
    return model.eval()


def from_pretrained_quietly(hf, adapter_dir):
    """PeftModel.from_pretrained, failing on its warning of adapter keys that the file lacks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = peft.PeftModel.from_pretrained(hf, str(adapter_dir)).eval()
    missing = [str(w.message) for w in caught if "missing adapter keys" in str(w.message)]
    assert not missing, missing
    return model


def test_our_adapter_has_the_keys_peft_writes_and_gives_peft_logits_on_image_rows(family, tmp_path):
    hf_model, rows, directory = family
    ours = lora_model(directory, seed=1)
    save_model(str(tmp_path), ours, base=frozen_base_dir(ours))  # adapter-only: it names the base
    adapter = tmp_path / "adapter"
    with open(adapter / "adapter_config.json") as f:
        assert json.load(f)["base_model_name_or_path"] == os.path.abspath(directory)
    pm = from_pretrained_quietly(hf_model(), adapter)
    written, _ = read_safetensors(str(adapter / "adapter_model.safetensors"))
    # what PEFT itself would save of this model under our adapter_config.json: the same keys, no tower's
    assert sorted(written) == sorted(peft.get_peft_model_state_dict(pm))
    assert all(".language_model.layers." in k for k in written) and len(written) == 2 * 7 * len(ours.model.layers)
    got = ours_logits(ours, rows)
    assert_close(got, peft_logits(pm, rows))
    with pm.disable_adapter():
        base = peft_logits(pm, rows)
    assert max((a - b).abs().max().item() for a, b in zip(got, base)) > 1e-3, "the adapter changed nothing"


def test_an_adapter_peft_made_loads_in_ours_and_gives_peft_logits(family, tmp_path):
    hf_model, rows, directory = family
    shutil.copytree(directory, tmp_path, dirs_exist_ok=True)
    # the language model's projections by a pattern of the kind fine-tuning recipes write (none of the tower's)
    cfg = peft.LoraConfig(
        r=4, lora_alpha=16, target_modules=r"^(?!.*visual).*(?:q_proj|v_proj|down_proj)", init_lora_weights=False
    )
    torch.manual_seed(5)
    pm = peft.get_peft_model(hf_model(), cfg).eval()
    pm.save_pretrained(tmp_path / "adapter")
    ours = load_decoder(str(tmp_path), CPU).eval()
    assert ours.lora is not None and sorted(ours.lora["target_modules"]) == ["down_proj", "q_proj", "v_proj"]
    assert_close(ours_logits(ours, rows), peft_logits(pm, rows))


def test_an_adapter_saved_under_the_hub_layout_names_still_loads(family, tmp_path):
    """Our saves before PEFT's names: keys `base_model.model.model.layers.*`, target_modules a list of names."""
    _, rows, directory = family
    ours = lora_model(directory, seed=2, targets=["q_proj", "up_proj"])
    save_model(str(tmp_path / "new"), ours)
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    adapter = tmp_path / "old" / "adapter"
    written, _ = read_safetensors(str(adapter / "adapter_model.safetensors"))
    old = {k.replace("model.language_model.layers.", "model.layers."): v for k, v in written.items()}
    assert old.keys() != written.keys()
    write_safetensors(str(adapter / "adapter_model.safetensors"), old)
    with open(adapter / "adapter_config.json") as f:
        acfg = json.load(f)
    with open(adapter / "adapter_config.json", "w") as f:
        json.dump(dict(acfg, target_modules=["q_proj", "up_proj"]), f)
    want = ours_logits(ours, rows)
    for d in ("new", "old"):
        back = load_decoder(str(tmp_path / d), CPU).eval()
        assert back.lora["target_modules"] == ["q_proj", "up_proj"]
        for a, b in zip(ours_logits(back, rows), want):
            assert torch.equal(a, b), d


def test_a_peft_adapter_on_the_vision_tower_is_refused_naming_the_fix(tmp_path):
    """A list of names adapts Qwen2.5-VL's vision MLPs too (gate_proj, up_proj, down_proj), which ours cannot apply."""
    raw = qwen25.TINY_VL
    hf = transformers.Qwen2_5_VLForConditionalGeneration(transformers.Qwen2_5_VLConfig(**raw)).float()
    hf.save_pretrained(tmp_path)
    pm = peft.get_peft_model(hf, peft.LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "gate_proj"]))
    pm.save_pretrained(tmp_path / "adapter")
    with pytest.raises(
        CheckpointError, match=r"adapters on the vision tower \(base_model\.model\.model\.visual\.blocks"
    ):
        load_decoder(str(tmp_path), CPU)
