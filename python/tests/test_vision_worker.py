"""The worker's image seam (vision.images_from_buffers): forward, backward and generate requests carry each row's
images as `rowImages` (images per row), `imageGrids` ((t, h, w) per image) and `pixelValues` (patches x 1176, float32,
as Qwen2VLImageProcessor flattens them). A tiny random Qwen2.5-VL with a 64-token vocabulary; the model itself is held
against transformers in test_vision_parity.py, here the requests against the model called directly.
"""

import pytest
import torch
from ragen_torch.random_checkpoint import write_random_weights
from ragen_torch.safetensors_io import load_weights, save_weights
from ragen_torch.token_stats import plain_token_stats_from_logits, suppressed_ids

IMAGE, START, END = 60, 58, 59  # <|image_pad|>, <|vision_start|>, <|vision_end|> of the tiny vocabulary
TINY_VL = dict(
    architectures=["Qwen2_5_VLForConditionalGeneration"],
    model_type="qwen2_5_vl",
    vocab_size=64,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    rms_norm_eps=1e-6,
    rope_theta=100.0,  # low frequencies turn too: positions matter at this width
    rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
    hidden_act="silu",
    bos_token_id=1,
    eos_token_id=2,
    image_token_id=IMAGE,
    vision_start_token_id=START,
    vision_end_token_id=END,
    tie_word_embeddings=False,
    vision_config=dict(
        depth=2, hidden_size=16, intermediate_size=24, num_heads=2, out_hidden_size=32, fullatt_block_indexes=[1]
    ),
)
GRIDS = [[1, 4, 6], [1, 2, 2]]  # patches: 24 (6 image tokens), 4 (1 image token)


def image(grid, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(grid[0] * grid[1] * grid[2], 3 * 2 * 14 * 14, generator=g)


def image_row(prefix, grids, suffix):
    row = list(prefix)
    for t, h, w in grids:
        row += [START] + [IMAGE] * (t * h * w // 4) + [END]
    return row + list(suffix)


# Row 0: two images; row 1: text only; row 2: one image.
ROWS = [image_row([3, 5], GRIDS, [7, 9, 11]), [4, 8, 15, 16], image_row([6], GRIDS[:1], [12, 13])]
PIXELS = [[image(GRIDS[0], 1), image(GRIDS[1], 2)], [], [image(GRIDS[0], 3)]]
ROW_GRIDS = [GRIDS, [], GRIDS[:1]]


def image_buffers(pixels=PIXELS, grids=ROW_GRIDS):
    flat = [p for row in pixels for p in row]
    return {
        "rowImages": torch.tensor([len(r) for r in pixels], dtype=torch.int32),
        "imageGrids": torch.tensor([g for row in grids for g in row], dtype=torch.int32).reshape(-1, 3),
        "pixelValues": torch.cat(flat) if flat else torch.zeros(0, 1176),
    }


def request(rows, T=None, **h):
    T = T or max(len(r) for r in rows) + 2
    ids = torch.zeros(len(rows), T, dtype=torch.int32)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r)
    bufs = {"ids": ids.reshape(-1), "lengths": torch.tensor([len(r) for r in rows], dtype=torch.int32)}
    return dict({"B": len(rows), "T": T, "role": "policy"}, **h), bufs


def direct_logprobs(model, row, pixels, grids):
    """Log-probs of the row's tokens 1.. from the model called on the row alone."""
    ids = torch.tensor([row])
    images = [(torch.cat(pixels), torch.tensor(grids))] if pixels else None
    with torch.no_grad():
        _, logits = model(ids, with_logits=True, images=images)
    return plain_token_stats_from_logits(logits[0, :-1], ids[0, 1:], False, suppressed_ids(model))[0]


@pytest.fixture
def vl_checkpoint(tmp_path):
    """The tiny VL checkpoint with its matrices at std 0.3 (not 0.02): attention sharp enough that a position off by
    a few moves the log-probs past the tolerances."""
    d = write_random_weights(str(tmp_path / "vl"), TINY_VL, seed=3, dtype=torch.float32)
    w = load_weights(d)
    save_weights(d, {k: t * 15 if t.dim() == 2 else t for k, t in w.items()})
    return d


def test_forward_with_images_equals_the_model_on_each_row_alone(vl_checkpoint, make_worker):
    worker, reply = make_worker(vl_checkpoint)
    h, bufs = request(ROWS, entropy=False)
    out = worker.handle("forward", h, dict(bufs, **image_buffers()))[1]["logprobs"]
    model = worker.roles.policy
    for b, row in enumerate(ROWS):
        ref = direct_logprobs(model, row, PIXELS[b], ROW_GRIDS[b])
        torch.testing.assert_close(out[b, 1 : len(row)], ref, atol=1e-5, rtol=1e-5)
        assert (out[b, len(row) :] == 0).all()
    # The images count: other pixels move the log-probs of the tokens after them, not those before.
    moved = [[p + 0.5 for p in row] for row in PIXELS]
    out2 = worker.handle("forward", h, dict(bufs, **image_buffers(moved)))[1]["logprobs"]
    first_pad = ROWS[0].index(IMAGE)
    assert torch.equal(out2[0, 1 : first_pad + 1], out[0, 1 : first_pad + 1])
    assert (out2[0, first_pad + 1 : len(ROWS[0])] - out[0, first_pad + 1 : len(ROWS[0])]).abs().max() > 1e-4
    assert torch.equal(out2[1], out[1])  # the text-only row


def test_the_vision_tower_is_frozen_unless_vision_train(vl_checkpoint, make_worker):
    frozen, frozen_reply = make_worker(vl_checkpoint)
    names = [n for n, _ in frozen.roles.parameters("policy")]
    assert names and not any(n.startswith("visual.") for n in names)
    worker, reply = make_worker(vl_checkpoint, vision={"train": True})
    names = dict(worker.roles.parameters("policy"))
    assert "visual.blocks.0.attn.qkv.weight" in names and "model.layers.0.self_attn.q_proj.weight" in names
    tower = sum(p.numel() for p in worker.roles.policy.visual.parameters())
    assert reply["trainableParameters"] == frozen_reply["trainableParameters"] + tower
    h, bufs = request(ROWS)
    worker.handle("backward_begin", h, dict(bufs, **image_buffers()))
    worker.handle("backward_end", {"B": h["B"], "T": h["T"]}, {"logprobs": -torch.ones(h["B"] * h["T"])})
    grads = worker.handle("tensors", {"role": "policy", "what": "grad"}, {})[1]
    assert grads["visual.blocks.0.attn.qkv.weight"].abs().sum() > 0
    assert grads["visual.patch_embed.proj.weight"].abs().sum() > 0


def test_lora_trains_the_language_model_and_vision_train_adds_the_tower(vl_checkpoint, make_worker):
    lora = {"r": 4, "alpha": 8, "targetModules": "all-linear"}
    worker, _ = make_worker(vl_checkpoint, lora=lora)
    names = [n for n, _ in worker.roles.parameters("policy")]
    assert names and all(".lora_" in n and ".layers." in n for n in names)
    worker, _ = make_worker(vl_checkpoint, lora=lora, vision={"train": True})
    names = [n for n, _ in worker.roles.parameters("policy")]
    assert any(n.startswith("visual.merger.") for n in names) and any(".lora_A" in n for n in names)


def test_greedy_generate_with_images_is_the_forward_passs_argmax(vl_checkpoint, make_worker):
    """Decoding after the images continues at the text position after them (max position + 1): the sampled tokens'
    log-probs equal a whole forward pass of prompt + completion."""
    worker, _ = make_worker(vl_checkpoint)
    prompts = [ROWS[0], ROWS[1], ROWS[2], ROWS[0]]  # row 3 repeats row 0's ids with other pixels: no shared prefill
    pixels = PIXELS + [[p * -1 for p in PIXELS[0]]]
    grids = ROW_GRIDS + [ROW_GRIDS[0]]
    bufs = {
        "prompts": torch.tensor([t for p in prompts for t in p], dtype=torch.int32),
        "lengths": torch.tensor([len(p) for p in prompts], dtype=torch.int32),
        **image_buffers(pixels, grids),
    }
    params = {"maxNewTokens": 5, "temperature": 0, "seed": 0}
    out = worker.handle("generate", {"params": params}, bufs)[1]
    lens = out["lengths"].tolist()
    assert lens == [5, 5, 5, 5]
    toks = out["tokens"].split(lens)
    lps = out["logprobs"].split(lens)
    model = worker.roles.policy
    compared = 0
    for b, p in enumerate(prompts):
        new = toks[b].tolist()
        assert not {IMAGE, START, END} & set(new)  # vision tokens are never sampled (suppressed_ids)
        ref = direct_logprobs(model, p + new, pixels[b], grids[b])[len(p) - 1 :]
        torch.testing.assert_close(lps[b], ref, atol=1e-4, rtol=1e-4)
        compared += len(new)
    assert compared >= 8
    assert not torch.equal(lps[3], lps[0])


def test_images_for_a_text_only_model_are_refused_with_a_sentence(checkpoint, make_worker):
    worker, _ = make_worker(checkpoint[0])
    h, bufs = request([[3, 4, 5]])
    imgs = image_buffers([[image(GRIDS[1], 0)]], [[GRIDS[1]]])
    with pytest.raises(ValueError, match="model_type `qwen2`\\) is text-only"):
        worker.handle("forward", h, dict(bufs, **imgs))


def test_a_row_whose_pads_miss_its_images_features_is_refused(vl_checkpoint, make_worker):
    worker, _ = make_worker(vl_checkpoint)
    short = ROWS[2][:3] + ROWS[2][4:]  # one <|image_pad|> fewer than the image's 6 features
    h, bufs = request([short])
    with pytest.raises(ValueError, match="row 0 holds 5 <\\|image_pad\\|> tokens .* make 6 features"):
        worker.handle("forward", h, dict(bufs, **image_buffers([PIXELS[2]], [ROW_GRIDS[2]])))
    h, bufs = request([ROWS[2]])
    with pytest.raises(ValueError, match="pixelValues of shape \\[24, 1176\\] must be"):
        worker.handle("forward", h, dict(bufs, **image_buffers([PIXELS[2]], [[GRIDS[1]]])))


def test_packing_refuses_image_rows(vl_checkpoint, make_worker):
    worker, _ = make_worker(vl_checkpoint, packing=True)
    h, bufs = request(ROWS)
    with pytest.raises(ValueError, match="set model.torch.packing false"):
        worker.handle("forward", h, dict(bufs, **image_buffers()))


def test_qwen3_vl_greedy_generate_of_a_left_padded_image_row_is_the_forward_passs(tmp_path, make_worker):
    """Qwen3-VL (DeepStack features added after the first layers) through generate: the image row is the shorter,
    left-padded one, and its sampled tokens' log-probs equal a whole forward pass's."""
    from ragen_torch.random_checkpoint import SHAPES

    d = write_random_weights(str(tmp_path / "q3"), SHAPES["qwen3-vl-tiny"], seed=1, dtype=torch.float32)
    save_weights(d, {k: t * 15 if t.dim() == 2 else t for k, t in load_weights(d).items()})
    worker, _ = make_worker(d)
    pad, grid = 151655, [[1, 4, 4]]
    rows = [[151644, 872, 198, 151652] + [pad] * 4 + [151653, 9707, 151645], [151644, 872, 198, 9707, 11, 1879] * 3]
    pixels = torch.randn(16, 3 * 2 * 16 * 16, generator=torch.Generator().manual_seed(0))
    bufs = {
        "prompts": torch.tensor(rows[0] + rows[1], dtype=torch.int32),
        "lengths": torch.tensor([len(r) for r in rows], dtype=torch.int32),
        "rowImages": torch.tensor([1, 0], dtype=torch.int32),
        "imageGrids": torch.tensor(grid, dtype=torch.int32),
        "pixelValues": pixels,
    }
    out = worker.handle("generate", {"params": {"maxNewTokens": 6, "temperature": 0, "seed": 0}}, bufs)[1]
    lens = out["lengths"].tolist()
    toks, lps = out["tokens"].split(lens), out["logprobs"].split(lens)
    compared = 0
    for b, (row, images) in enumerate([(rows[0], [(pixels, torch.tensor(grid))]), (rows[1], None)]):
        new = toks[b].tolist()
        assert not set(range(151652, 151657)) & set(new)  # vision tokens are never sampled
        ids = torch.tensor([row + new])
        with torch.no_grad():
            _, logits = worker.roles.policy(ids, with_logits=True, images=images)
        off = suppressed_ids(worker.roles.policy)
        ref = plain_token_stats_from_logits(logits[0, :-1], ids[0, 1:], False, off)[0][len(row) - 1 :]
        torch.testing.assert_close(lps[b], ref, atol=1e-4, rtol=1e-4)
        compared += len(new)
    assert compared >= 6


def test_a_save_keeps_a_trained_tower_in_the_base_weights_and_only_adapters_in_the_adapter(
    vl_checkpoint, make_worker, tmp_path
):
    from ragen_torch.model import load_decoder

    worker, _ = make_worker(vl_checkpoint, lora={"r": 4, "alpha": 8}, vision={"train": True})
    with torch.no_grad():
        worker.roles.policy.visual.merger.mlp[0].bias.add_(0.25)  # as if a step had moved the tower
    worker.handle("save", {"dir": str(tmp_path / "ckpt")}, {})
    adapter = load_weights(str(tmp_path / "ckpt" / "adapter"), "adapter_model.safetensors")
    assert adapter and all(".lora_" in k for k in adapter)
    back = load_decoder(str(tmp_path / "ckpt"), torch.device("cpu"))
    torch.testing.assert_close(back.visual.merger.mlp[0].bias, worker.roles.policy.visual.merger.mlp[0].bias)
    assert back.visual.merger.mlp[0].bias.abs().min() >= 0.2
