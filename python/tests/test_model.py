"""model.py: the decoder of each family against the position-by-position reference (tiny.py), its masks (causal,
left padding, packed segments), LoRA, gradient checkpointing, and the config and weight checks."""

import json
import os

import pytest
import tiny
import torch
from ragen_torch.model import HAS_SDPA, Decoder, ModelConfig, attention, load_decoder
from ragen_torch.safetensors_io import CheckpointError

ROW = [3, 17, 5, 9, 30, 1, 22]


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama"])
def test_a_loaded_decoder_computes_the_reference_logits(tmp_path, family):
    raw = tiny.config(family)
    path, w = tiny.write_checkpoint(tmp_path, raw, seed=1)
    model = load_decoder(path, torch.device("cpu"))
    with torch.no_grad():
        h, logits = model(torch.tensor([ROW]), with_logits=True)
    assert h.shape == (1, len(ROW), raw["hidden_size"])
    assert logits.shape == (1, len(ROW), raw["vocab_size"])
    torch.testing.assert_close(logits[0], tiny.reference_logits(w, raw, ROW), atol=1e-4, rtol=1e-4)


def test_a_token_changes_the_outputs_at_and_after_its_position_only(checkpoint):
    path, _, _ = checkpoint
    model = load_decoder(path, torch.device("cpu"))
    other = list(ROW)
    other[4] = 11
    with torch.no_grad():
        a, b = model(torch.tensor([ROW, other]), with_logits=True)[1]
    torch.testing.assert_close(a[:4], b[:4], atol=0, rtol=0)
    assert (a[4:] - b[4:]).abs().amax(-1).min() > 1e-4


def test_left_padding_hidden_by_the_key_mask_leaves_a_rows_outputs_unchanged(checkpoint):
    path, raw, w = checkpoint
    model = load_decoder(path, torch.device("cpu"))
    pad = 3
    ids = torch.tensor([[0] * pad + ROW])
    positions = (torch.arange(ids.shape[1]) - pad).clamp(min=0)[None]
    key_valid = torch.arange(ids.shape[1])[None] >= pad
    with torch.no_grad():
        logits = model.logits(model.hidden(ids, positions, key_valid))
    torch.testing.assert_close(logits[0, pad:], tiny.reference_logits(w, raw, ROW), atol=1e-4, rtol=1e-4)


def test_packed_rows_with_restarted_positions_and_segments_match_each_row_alone(checkpoint):
    path, raw, w = checkpoint
    model = load_decoder(path, torch.device("cpu"))
    a, b = ROW[:4], ROW[2:]
    ids = torch.tensor([a + b])
    positions = torch.tensor([list(range(len(a))) + list(range(len(b)))])
    segments = torch.tensor([[0] * len(a) + [1] * len(b)])
    with torch.no_grad():
        logits = model(ids, with_logits=True, positions=positions, segments=segments)[1][0]
    torch.testing.assert_close(logits[: len(a)], tiny.reference_logits(w, raw, a), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(logits[len(a) :], tiny.reference_logits(w, raw, b), atol=1e-4, rtol=1e-4)


def test_lora_adds_alpha_over_r_times_b_a_x_and_trains_only_the_adapters(checkpoint):
    path, _, _ = checkpoint
    model = load_decoder(path, torch.device("cpu"))
    x = torch.tensor([ROW])
    with torch.no_grad():
        base = model(x, with_logits=True)[1]
    r, alpha = 2, 6.0
    model.attach_lora(r, alpha, 0.0, ["q_proj", "down_proj"], torch.Generator().manual_seed(0))
    with torch.no_grad():  # B starts at zero: the adapted model is the base model
        torch.testing.assert_close(model(x, with_logits=True)[1], base, atol=0, rtol=0)
    names = [n for n, _ in model.trainable()]
    modules = [f"model.layers.{i}.{m}" for i in range(2) for m in ("self_attn.q_proj", "mlp.down_proj")]
    assert names == [f"base_model.model.{m}.lora_{ab}.weight" for m in modules for ab in "AB"]
    assert all(not p.requires_grad for n, p in model.named_parameters() if ".lora_" not in n)
    q = model.model.layers[0].self_attn.q_proj
    with torch.no_grad():
        q.lora_B.copy_(torch.randn(q.lora_B.shape, generator=torch.Generator().manual_seed(1)))
        inp = torch.randn(3, q.weight.shape[1])
        want = inp @ q.weight.t() + q.bias + (alpha / r) * (inp @ q.lora_A.t() @ q.lora_B.t())
        torch.testing.assert_close(q(inp), want, atol=1e-5, rtol=1e-5)
        assert (model(x, with_logits=True)[1] - base).abs().max() > 1e-3
        model.set_adapters(False)
        torch.testing.assert_close(model(x, with_logits=True)[1], base, atol=0, rtol=0)


def test_gradient_checkpointing_gives_the_same_gradients(checkpoint):
    path, _, _ = checkpoint
    grads = []
    for checkpointing in (False, True):
        model = load_decoder(path, torch.device("cpu"))
        model.checkpointing = checkpointing
        model(torch.tensor([ROW]), with_logits=True)[1].logsumexp(-1).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert grads[0].keys() == grads[1].keys()
    for n in grads[0]:
        torch.testing.assert_close(grads[1][n], grads[0][n], atol=1e-6, rtol=1e-5, msg=n)


@pytest.mark.skipif(not HAS_SDPA, reason=f"torch {torch.__version__} lacks scaled_dot_product_attention (torch >= 2.0)")
def test_sdpa_attention_equals_the_plain_masked_softmax():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g) for _ in range(3))
    mask = torch.rand(2, 1, 5, 5, generator=g) > 0.4
    mask |= torch.eye(5, dtype=torch.bool)  # every query sees at least itself
    want = ((q @ k.transpose(-1, -2)) / 2.0).masked_fill(~mask, float("-inf")).softmax(-1) @ v
    torch.testing.assert_close(attention(q, k, v, mask), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"model_type": "gpt2"}, "model_type `gpt2`"),
        ({"hidden_act": "gelu"}, "hidden_act `gelu`"),
        ({"rope_scaling": {"rope_type": "yarn", "factor": 4}}, "RoPE scaling"),
        ({"use_sliding_window": True}, "use_sliding_window"),
        ({"hidden_size": "16"}, "`hidden_size`"),
        ({"num_key_value_heads": 3}, "multiple of num_key_value_heads (3)"),
    ],
)
def test_an_unsupported_config_is_refused_naming_the_key(change, fragment):
    with pytest.raises(CheckpointError, match=None) as e:
        ModelConfig(dict(tiny.config("qwen2"), **change), "cfg.json")
    assert fragment in str(e.value) and "cfg.json" in str(e.value)


def test_a_weight_of_the_wrong_shape_or_missing_is_refused_naming_it(tmp_path):
    raw = tiny.config("qwen2")
    w = tiny.random_weights(raw)
    w["model.norm.weight"] = torch.ones(15)
    tiny.write_checkpoint(tmp_path / "a", raw, weights=w)
    with pytest.raises(CheckpointError, match=r"`model.norm.weight` has shape \[15\], expected \[16\]"):
        load_decoder(str(tmp_path / "a"), torch.device("cpu"))
    del w["model.norm.weight"]
    tiny.write_checkpoint(tmp_path / "b", raw, weights=w)
    with pytest.raises(CheckpointError, match="`model.norm.weight` is missing"):
        load_decoder(str(tmp_path / "b"), torch.device("cpu"))
    with pytest.raises(CheckpointError, match="config.json is missing"):
        load_decoder(str(tmp_path / "nothing"), torch.device("cpu"))


def test_an_adapter_only_checkpoint_reads_its_base_from_the_directory_its_adapter_names(checkpoint, tmp_path):
    # the local engine's LoRA checkpoint (src/model/checkpoint.ts): config.json + adapter/, the base left where it was
    path, raw, w = checkpoint
    ckpt = tmp_path / "step-1"
    (ckpt / "adapter").mkdir(parents=True)
    (ckpt / "config.json").write_text(json.dumps(raw))
    r, alpha, C = 2, 4.0, raw["hidden_size"]
    q = "model.layers.0.self_attn.q_proj"
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(r, C, generator=g), torch.randn(C, r, generator=g)
    adapter = {"peft_type": "LORA", "r": r, "lora_alpha": alpha, "target_modules": ["q_proj"]}
    (ckpt / "adapter" / "adapter_config.json").write_text(json.dumps(dict(adapter, base_model_name_or_path=path)))
    layer1 = "model.layers.1.self_attn.q_proj"
    tiny.write_st(
        str(ckpt / "adapter" / "adapter_model.safetensors"),
        {
            f"base_model.model.{q}.lora_A.weight": a,
            f"base_model.model.{q}.lora_B.weight": b,
            f"base_model.model.{layer1}.lora_A.weight": torch.zeros(r, C),
            f"base_model.model.{layer1}.lora_B.weight": torch.zeros(C, r),
        },
    )
    model = load_decoder(str(ckpt), torch.device("cpu"))
    proj = model.model.layers[0].self_attn.q_proj
    torch.testing.assert_close(proj.weight.detach(), w[f"{q}.weight"], atol=0, rtol=0)
    inp = torch.randn(3, C, generator=g)
    with torch.no_grad():
        want = inp @ w[f"{q}.weight"].t() + w[f"{q}.bias"] + (alpha / r) * (inp @ a.t() @ b.t())
        torch.testing.assert_close(proj(inp), want, atol=1e-5, rtol=1e-5)
    os.rename(path, path + "-moved")
    with pytest.raises(CheckpointError, match="put the base model back there") as e:
        load_decoder(str(ckpt), torch.device("cpu"))
    assert path in str(e.value)


def test_a_fresh_decoder_has_exactly_the_checkpoints_tensor_names():
    for family in tiny.FAMILIES:
        raw = tiny.config(family)
        shapes = {k: tuple(v.shape) for k, v in Decoder(ModelConfig(raw)).state_dict().items()}
        assert shapes == tiny.tensor_names(raw)
