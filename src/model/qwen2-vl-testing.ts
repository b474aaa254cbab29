// A tiny Qwen2.5-VL for tests: its config, one image's pixel values and a prompt around the image's tokens.
import { Rng } from '../util/index.js';
import { vlConfigFromHF } from './qwen2-vl-config.js';
import type { Tensor } from '../tensor/index.js';
import { Qwen25VL, type VisionInput } from './qwen2-vl.js';

export const IMAGE = 21;
/**
 * Vocabulary 64 (20 = <|vision_start|>, 21 = <|image_pad|>, 22 = <|video_pad|>, 23 = <|vision_end|>, 24 =
 * <|vision_pad|>), head_dim 8 (mrope [2, 1, 1]); vision windows of 2 x 2 merged patches.
 */
export const TINY_VL_JSON = {
  model_type: 'qwen2_5_vl',
  image_token_id: IMAGE,
  video_token_id: 22,
  vision_start_token_id: 20,
  vision_end_token_id: 23,
  vision_token_id: 24,
  text_config: {
    vocab_size: 64,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    rope_parameters: { rope_type: 'default', rope_theta: 10000, mrope_section: [2, 1, 1] },
  },
  vision_config: {
    depth: 2,
    hidden_size: 8,
    intermediate_size: 12,
    num_heads: 2,
    out_hidden_size: 16,
    fullatt_block_indexes: [1],
    window_size: 56,
    patch_size: 14,
  },
};
export const TINY_VL = vlConfigFromHF(TINY_VL_JSON);

/** One 6 x 4 patch image (3 x 2 merged: a full window and one cut at the edge), random pixel values. */
export function visionInput(): VisionInput {
  const rng = new Rng(3);
  return { pixels: Float32Array.from({ length: 24 * 1176 }, () => rng.normal()), grids: [[1, 6, 4]] };
}

export const IDS = Int32Array.from([3, 7, 20, ...new Array<number>(6).fill(IMAGE), 5, 9, 11, 2]);

/** Add normal(0, std) noise to `t` in place (weights off their init, so each one shows in the outputs). */
export function jitter(t: Tensor, rng: Rng, std = 0.2): void {
  t.backend.write(
    t.buf,
    t.toFloat32Array().map((v) => v + std * rng.normal()),
  );
}

/** The tiny model on the current backend, every weight jittered. */
export function jitteredVL(seed: number): Qwen25VL {
  const m = Qwen25VL.init(TINY_VL, seed);
  const rng = new Rng(seed + 100);
  for (const t of [...m.lm.weights.values(), ...m.visual.weights.values()]) jitter(t, rng);
  return m;
}
