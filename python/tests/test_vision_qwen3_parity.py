"""transformers' Qwen3VLForConditionalGeneration as the reference for the worker's Qwen3-VL (vision_qwen3.py and
vision.py): a random tiny config, images through Qwen3VLProcessor (patch 16), logits equal in float32 (1e-5 relative),
and one moved weight (a DeepStack merger's, the position table's) breaks it. Skipped without transformers unless
RAGEN_REQUIRE_HF=1.
"""

import math
import os

import pytest
import tiny
import torch
from ragen_torch.model import load_decoder
from ragen_torch.vision import mrope_axes, rope_index
from test_vision_parity import QWEN_TOKENIZER, ROW_TEXT, batched

transformers = tiny.require_hf("transformers")

CPU = torch.device("cpu")
# Qwen3-VL's keys at a tiny width: q/k norms and head_dim 16 in the language model, interleaved mrope [4, 2, 2],
# DeepStack after vision blocks 0 and 1, a 6 x 6 position table.
TINY_QWEN3_VL = dict(
    architectures=["Qwen3VLForConditionalGeneration"],
    model_type="qwen3_vl",
    image_token_id=151655,
    video_token_id=151656,
    vision_start_token_id=151652,
    vision_end_token_id=151653,
    tie_word_embeddings=False,
    text_config=dict(
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        rms_norm_eps=1e-6,
        rope_parameters={
            "rope_type": "default",
            "mrope_section": [4, 2, 2],
            "mrope_interleaved": True,
            "rope_theta": 5000000.0,
        },
    ),
    vision_config=dict(
        depth=3,
        hidden_size=32,
        intermediate_size=48,
        num_heads=2,
        out_hidden_size=64,
        num_position_embeddings=36,
        deepstack_visual_indexes=[0, 1],
    ),
)
ROW_IMAGES = [[(112, 160), (64, 96)], [(96, 128)]]


def processor():
    from transformers import PreTrainedTokenizerFast, Qwen3VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    if not os.path.exists(QWEN_TOKENIZER):
        pytest.skip(f"the Qwen tokenizer is not installed ({QWEN_TOKENIZER}; npm install)")
    Qwen3VLProcessor.check_argument_for_proper_class = lambda self, name, arg: type(arg)
    tok = PreTrainedTokenizerFast(tokenizer_file=QWEN_TOKENIZER)
    ip = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return Qwen3VLProcessor(image_processor=ip, tokenizer=tok, video_processor=object())


def row_inputs(proc, row):
    g = torch.Generator().manual_seed(row)
    images = [torch.randint(0, 256, (h, w, 3), generator=g, dtype=torch.uint8).numpy() for h, w in ROW_IMAGES[row]]
    return proc(images=images, text=[ROW_TEXT[row]], return_tensors="pt")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    torch.manual_seed(9)
    hf = transformers.Qwen3VLForConditionalGeneration(transformers.Qwen3VLConfig(**TINY_QWEN3_VL)).float()
    with torch.no_grad():  # norms and biases off their initial values, so that each is checked
        for name, p in hf.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                p.add_(torch.randn_like(p) * 0.1)
    for c in (hf.config, hf.model.visual.config, hf.model.language_model.config):
        c._attn_implementation = "eager"
    hf = hf.eval()
    directory = tmp_path_factory.mktemp("qwen3_vl")
    hf.save_pretrained(directory)
    proc = processor()
    rows = [row_inputs(proc, r) for r in range(len(ROW_IMAGES))]
    return hf, load_decoder(str(directory), CPU).eval(), rows, directory


def close(ours, model_rows, hf):
    ids, images = batched(model_rows)
    with torch.no_grad():
        _, logits = ours(ids, with_logits=True, images=images)
    for b, r in enumerate(model_rows):
        with torch.no_grad():
            ref = hf(**r).logits[0]
        got = logits[b, : r["input_ids"].shape[1]]
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item(), msg=f"row {b}")


def test_float32_logits_of_image_rows_equal_transformers(pair):
    hf, ours, rows, _ = pair
    assert [r["image_grid_thw"].tolist() for r in rows] == [
        [[1, 8, 10], [1, 4, 6]],
        [[1, 6, 8]],
    ]  # 128x160, 64x96, 96x128 after rounding
    close(ours, rows, hf)


def test_the_3d_position_ids_equal_transformers_and_the_sections_interleave(pair):
    hf, ours, rows, _ = pair
    for r in rows:
        ref, _ = hf.model.get_rope_index(
            r["input_ids"], mm_token_type_ids=r["mm_token_type_ids"], image_grid_thw=r["image_grid_thw"]
        )
        assert torch.equal(rope_index(r["input_ids"][0], r["image_grid_thw"], ours.config)[0], ref[:, 0])
    assert mrope_axes([4, 2, 2], True).tolist() == [0, 1, 2, 0, 1, 2, 0, 0]
    assert mrope_axes([4, 2, 2], False).tolist() == [0, 0, 0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize(
    "name",
    [
        "visual.deepstack_merger_list.1.linear_fc2.weight",
        "visual.pos_embed.weight",
        "model.layers.2.self_attn.q_norm.weight",
    ],
)
def test_a_perturbed_weight_breaks_the_parity(pair, name):
    hf, _, rows, directory = pair
    moved = load_decoder(str(directory), CPU).eval()
    with torch.no_grad():
        w = dict(moved.named_parameters())[name]  # noise, not a constant, which LayerNorm would remove
        w.add_(torch.randn(w.shape, generator=torch.Generator().manual_seed(0)) * 1e-3)
    with pytest.raises(AssertionError):
        close(moved, rows, hf)


def test_a_worker_save_loads_in_transformers_with_the_same_logits(pair, tmp_path):
    """save_model writes Qwen3-VL's own layout (`model.language_model.*`, `model.visual.*`): transformers loads it with
    no missing or unexpected key, and its logits are ours."""
    from ragen_torch.checkpoint import save_model

    _, ours, rows, _ = pair
    save_model(str(tmp_path), ours)
    hf2, info = transformers.Qwen3VLForConditionalGeneration.from_pretrained(
        str(tmp_path), output_loading_info=True, dtype=torch.float32, attn_implementation="eager"
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    close(ours, rows, hf2.eval())


@pytest.mark.parametrize("shape", ["qwen3-vl-4b", "qwen3-vl-tiny"])
def test_the_shapes_configs_build_transformers_model_with_our_tensor_names(shape):
    """shapes.json's Qwen3-VL configs (`ragen model init`) read by transformers give the weights a worker save writes,
    name for name and shape for shape (meta device)."""
    from ragen_torch.model import config_from_raw, make_decoder
    from ragen_torch.random_checkpoint import SHAPES

    raw = SHAPES[shape]
    with torch.device("meta"):
        hf = transformers.Qwen3VLForConditionalGeneration(transformers.Qwen3VLConfig(**raw))
        ours = make_decoder(config_from_raw(raw))
    theirs = {k: tuple(v.shape) for k, v in hf.state_dict().items()}
    if raw["tie_word_embeddings"]:
        theirs.pop("lm_head.weight")
    assert {k: tuple(v.shape) for k, v in ours.base_state().items()} == theirs
    n = sum(math.prod(s) for s in theirs.values())
    if shape == "qwen3-vl-4b":  # the model card's size: 4.44B parameters
        assert abs(n - 4.44e9) < 0.005e9, n
