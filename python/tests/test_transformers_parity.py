"""transformers and PEFT as the reference for the worker's decoder (model.py) on the CPU: Qwen2, Qwen2.5, Qwen3 and Llama
shapes at a tiny width with the real vocabularies and random weights give transformers' logits (float32 and under bf16
autocast; masks, left padding, KV-cache decoding), checkpoints and LoRA adapters cross over both ways. Skipped, with the
reason, where transformers or PEFT is not installed; RAGEN_REQUIRE_HF=1 (the wheel environment's lane in CI) makes
their absence a failure instead.
"""

import json
import os

import pytest
import tiny
import torch
from ragen_torch.checkpoint import frozen_base_dir, save_model
from ragen_torch.generate import generate
from ragen_torch.model import load_decoder
from ragen_torch.random_checkpoint import SHAPES

transformers = tiny.require_hf("transformers")
peft = tiny.require_hf("peft")

CPU = torch.device("cpu")
TINY = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
# Each family's published config.json keys (the Instruct models') at a test width; the vocabularies are the real ones.
SHAPE_CONFIGS = {
    "qwen2": dict(  # Qwen2-0.5B-Instruct: tied head
        SHAPES["qwen2.5-0.5b"], architectures=["Qwen2ForCausalLM"], num_key_value_heads=2, **TINY
    ),
    "qwen2.5": dict(SHAPES["qwen2.5-tiny"], **TINY),  # untied head, q/k/v bias
    "qwen3": dict(SHAPES["qwen3-tiny"], head_dim=16, **TINY),  # q/k norm, head_dim != C / H, tied head
    "llama": dict(  # Meta-Llama-3-8B-Instruct's keys (plain RoPE): the 128,256-token vocabulary
        architectures=["LlamaForCausalLM"],
        model_type="llama",
        attention_bias=False,
        bos_token_id=128000,
        eos_token_id=128009,
        hidden_act="silu",
        max_position_embeddings=8192,
        num_key_value_heads=2,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        tie_word_embeddings=False,
        vocab_size=128256,
        **TINY,
    ),
}
FAMILIES = list(SHAPE_CONFIGS)
ROWS = [[151, 9, 70321, 5, 88, 1200, 3], [42, 100000, 7, 15]]  # ids below every vocabulary's size


def hf_model(raw, weights):
    """transformers' model of `raw` holding `weights` (by HF name), float32, eval mode, plain ("eager") attention."""
    cfg = transformers.AutoConfig.for_model(**raw)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    return model.eval()


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request, tmp_path_factory):
    """(family, raw config, transformers' model, ours loaded from its sharded save_pretrained output, that directory)."""
    raw = SHAPE_CONFIGS[request.param]
    weights = tiny.random_weights(raw, seed=7, scale=0.1)
    hf = hf_model(raw, weights)
    directory = tmp_path_factory.mktemp(request.param)
    hf.save_pretrained(directory, max_shard_size="12MB")
    assert os.path.exists(directory / "model.safetensors.index.json"), "save_pretrained did not shard"
    return request.param, raw, hf, load_decoder(str(directory), CPU), directory


def padded(rows):
    """Left-padded ids (B, T), attention mask (B, T) and positions counted from each row's first token."""
    T = max(len(r) for r in rows)
    ids = torch.tensor([[0] * (T - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (T - len(r)) + [1] * len(r) for r in rows])
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def ours_logits(model, ids, mask, positions):
    with torch.no_grad():
        return model.logits(model.hidden(ids, positions, mask.bool()))


def hf_logits(model, ids, mask, positions):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, position_ids=positions).logits


def real(mask):
    """The positions that hold a token (not padding)."""
    return mask.bool()


def test_float32_logits_of_a_left_padded_batch_equal_transformers(pair):
    _, raw, hf, ours, _ = pair
    ids, mask, pos = padded(ROWS)
    a, b = ours_logits(ours, ids, mask, pos), hf_logits(hf, ids, mask, pos)
    assert a.shape == (2, 7, raw["vocab_size"])
    torch.testing.assert_close(a[real(mask)], b[real(mask)], atol=1e-5, rtol=1e-5)


def test_a_perturbed_weight_of_ours_breaks_the_parity(pair):
    """The parity above can fail: one layer's v_proj moved by 1e-3 puts the logits outside its tolerance."""
    _, _, hf, ours, directory = pair
    moved = load_decoder(str(directory), CPU)
    with torch.no_grad():
        moved.model.layers[1].self_attn.v_proj.weight.add_(1e-3)
    ids, mask, pos = padded(ROWS)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(
            ours_logits(moved, ids, mask, pos)[real(mask)],
            hf_logits(hf, ids, mask, pos)[real(mask)],
            atol=1e-5,
            rtol=1e-5,
        )


def test_bf16_autocast_logits_equal_transformers_within_bf16_rounding(pair):
    _, _, hf, ours, _ = pair
    ids, mask, pos = padded(ROWS)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a, b = ours_logits(ours, ids, mask, pos).float(), hf_logits(hf, ids, mask, pos).float()
    exact = hf_logits(hf, ids, mask, pos)
    m = real(mask)
    # Both round to bf16 (8 significant bits) in the same places: a few units of its last place at the logits' scale.
    scale = exact[m].abs().amax().item()
    torch.testing.assert_close(a[m], b[m], atol=4 * 2**-8 * scale, rtol=0)
    # and ours strays from the float32 logits no further than transformers' own bf16 run does (with a margin)
    assert (a[m] - exact[m]).abs().amax() <= 1.5 * (b[m] - exact[m]).abs().amax()
    assert (a[m] - exact[m]).abs().amax() > 0, "autocast changed nothing: the bf16 path did not run"


def test_greedy_kv_cache_decoding_gives_transformers_tokens_and_logprobs(pair):
    _, raw, hf, ours, _ = pair
    n = 6
    ids, mask, _ = padded(ROWS)
    with torch.no_grad():
        out = hf.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=n,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
            output_logits=True,
            return_dict_in_generate=True,
        )
    hf_tokens = out.sequences[:, ids.shape[1] :]
    hf_lps = torch.stack(out.logits, 1).float().log_softmax(-1).gather(-1, hf_tokens[..., None]).squeeze(-1)
    for mode in ("eager", "static"):
        params = {"maxNewTokens": n, "temperature": 0, "seed": 0}
        got = generate(ours, ROWS, params, mode=mode)
        for i, (tokens, lps, _) in enumerate(got):
            assert tokens == hf_tokens[i].tolist(), mode
            torch.testing.assert_close(torch.tensor(lps), hf_lps[i], atol=1e-5, rtol=1e-5)


def test_a_checkpoint_the_worker_saves_sharded_loads_in_transformers(pair, tmp_path):
    family, raw, hf, ours, _ = pair
    save_model(str(tmp_path), ours, max_shard_bytes=8 << 20)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    assert type(back).__name__ == raw["architectures"][0]
    assert back.dtype == torch.float32
    ids, mask, pos = padded(ROWS)
    torch.testing.assert_close(
        hf_logits(back, ids, mask, pos)[real(mask)], hf_logits(hf, ids, mask, pos)[real(mask)], atol=0, rtol=0
    )


def lora_decoder(directory, seed):
    """Ours with LoRA (r 4, alpha 8) on every projection, B drawn too (PEFT's start, B = 0, would test nothing)."""
    model = load_decoder(str(directory), CPU)
    g = torch.Generator().manual_seed(seed)
    model.attach_lora(4, 8.0, 0.0, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], g)
    with torch.no_grad():
        for _, _, lin in model.linears():
            lin.lora_B.copy_(torch.randn(lin.lora_B.shape, generator=g) * 0.1)
    return model.eval()


def test_our_lora_adapter_loads_in_peft_and_gives_peft_outputs(pair, tmp_path):
    _, _, hf, _, directory = pair
    ours = lora_decoder(directory, seed=3)
    save_model(str(tmp_path), ours)
    peft_model = peft.PeftModel.from_pretrained(hf, str(tmp_path / "adapter")).eval()
    try:
        ids, mask, pos = padded(ROWS)
        a, b = ours_logits(ours, ids, mask, pos), hf_logits(peft_model, ids, mask, pos)
        torch.testing.assert_close(a[real(mask)], b[real(mask)], atol=1e-5, rtol=1e-5)
        with peft_model.disable_adapter():
            base = hf_logits(peft_model, ids, mask, pos)
        assert (a - base)[real(mask)].abs().amax() > 1e-3, "the adapter changed nothing"
    finally:
        peft_model.unload()  # the module-scoped transformers model goes back to its plain layers


def test_an_adapter_only_checkpoint_loads_in_peft_from_the_base_it_names(pair, tmp_path):
    _, _, _, _, directory = pair
    ours = lora_decoder(directory, seed=4)
    save_model(str(tmp_path), ours, base=frozen_base_dir(ours))
    assert not (tmp_path / "model.safetensors").exists() and not (tmp_path / "model.safetensors.index.json").exists()
    # PEFT reads the base from adapter_config.json's base_model_name_or_path, as the worker and the local engine do
    back = peft.AutoPeftModelForCausalLM.from_pretrained(str(tmp_path / "adapter"), attn_implementation="eager").eval()
    ids, mask, pos = padded(ROWS)
    torch.testing.assert_close(
        hf_logits(back, ids, mask, pos)[real(mask)], ours_logits(ours, ids, mask, pos)[real(mask)], atol=1e-5, rtol=1e-5
    )


def test_a_peft_adapter_loads_in_ours_and_gives_peft_outputs(pair, tmp_path):
    _, raw, _, _, _ = pair
    base = hf_model(raw, tiny.random_weights(raw, seed=7, scale=0.1))
    base.save_pretrained(tmp_path)  # before PEFT wraps its layers
    cfg = peft.LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    torch.manual_seed(5)
    peft_model = peft.get_peft_model(base, cfg).eval()
    peft_model.save_pretrained(tmp_path / "adapter")
    ours = load_decoder(str(tmp_path), CPU).eval()
    assert ours.lora is not None and sorted(ours.lora["target_modules"]) == ["down_proj", "q_proj", "v_proj"]
    ids, mask, pos = padded(ROWS)
    torch.testing.assert_close(
        ours_logits(ours, ids, mask, pos)[real(mask)],
        hf_logits(peft_model, ids, mask, pos)[real(mask)],
        atol=1e-5,
        rtol=1e-5,
    )
