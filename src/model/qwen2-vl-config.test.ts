// Qwen2.5-VL config.json in both layouts (the published flat file, transformers 5.x's sub-configs), the checks that
// name a bad key, and checkpoints in the 5.x module layout loading as the published one.
import { describe, expect, it } from 'vitest';
import { noGrad, setBackend } from '../tensor/index.js';
import { vlConfigFromHF, vlConfigToHF } from './qwen2-vl-config.js';
import { IDS, jitteredVL, TINY_VL, visionInput } from './qwen2-vl-testing.js';
import { publishedName, Qwen25VL } from './qwen2-vl.js';
import type { WeightMap } from './safetensors.js';

/** The keys of Qwen2.5-VL-3B-Instruct's published config.json (transformers 4.x layout) that the parser reads. */
const PUBLISHED_3B = {
  architectures: ['Qwen2_5_VLForConditionalGeneration'],
  model_type: 'qwen2_5_vl',
  hidden_size: 2048,
  intermediate_size: 11008,
  num_hidden_layers: 36,
  num_attention_heads: 16,
  num_key_value_heads: 2,
  hidden_act: 'silu',
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  rope_scaling: { type: 'mrope', mrope_section: [16, 24, 24] },
  max_position_embeddings: 128000,
  tie_word_embeddings: true,
  vocab_size: 151936,
  image_token_id: 151655,
  video_token_id: 151656,
  vision_start_token_id: 151652,
  use_sliding_window: false,
  vision_config: {
    depth: 32,
    hidden_act: 'silu',
    hidden_size: 1280,
    intermediate_size: 3420,
    num_heads: 16,
    in_chans: 3,
    out_hidden_size: 2048,
    patch_size: 14,
    spatial_merge_size: 2,
    spatial_patch_size: 14,
    window_size: 112,
    fullatt_block_indexes: [7, 15, 23, 31],
    tokens_per_second: 2,
    temporal_patch_size: 2,
  },
};

describe('vlConfigFromHF', () => {
  it("reads the published flat layout: the text keys at the top, rope_scaling's mrope_section", () => {
    const c = vlConfigFromHF(PUBLISHED_3B);
    expect(c.text).toMatchObject({ hiddenSize: 2048, numLayers: 36, numKvHeads: 2, headDim: 128, ropeTheta: 1e6 });
    expect(c.text.tieWordEmbeddings).toBe(true);
    expect(c.mropeSection).toEqual([16, 24, 24]);
    expect(c.vision).toMatchObject({
      depth: 32,
      hiddenSize: 1280,
      windowSize: 112,
      fullattBlockIndexes: [7, 15, 23, 31],
    });
    expect(c.imageTokenId).toBe(151655);
  });

  it('names the bad key and the fix', () => {
    expect(() => vlConfigFromHF({ ...PUBLISHED_3B, model_type: 'qwen2_vl' })).toThrow(/expected qwen2_5_vl/);
    expect(() =>
      vlConfigFromHF({ ...PUBLISHED_3B, rope_scaling: { type: 'mrope', mrope_section: [16, 24, 20] } }),
    ).toThrow(/mrope_section \[16, 24, 20\] must sum to head_dim \/ 2 = 64/);
    expect(() =>
      vlConfigFromHF({ ...PUBLISHED_3B, vision_config: { ...PUBLISHED_3B.vision_config, out_hidden_size: 1024 } }),
    ).toThrow(/out_hidden_size 1024 must equal the language model's hidden_size 2048/);
    expect(() =>
      vlConfigFromHF({ ...PUBLISHED_3B, vision_config: { ...PUBLISHED_3B.vision_config, hidden_act: 'gelu' } }),
    ).toThrow(/vision_config.hidden_act `gelu` is not supported/);
  });
});

describe('checkpoint layouts', () => {
  it("writes the Hub's flat config.json (rope_scaling.mrope_section, vision_config) that reads back to the same config", () => {
    const json = vlConfigToHF(TINY_VL);
    expect(json.text_config).toBeUndefined();
    expect(json.rope_scaling).toEqual({ type: 'mrope', mrope_section: [2, 1, 1] });
    expect((json.vision_config as Record<string, unknown>).window_size).toBe(56);
    expect(vlConfigFromHF(json)).toEqual(TINY_VL);
    const other = { ...TINY_VL, mropeSection: [1, 2, 1] as [number, number, number], imageTokenId: 30 };
    expect(vlConfigFromHF(vlConfigToHF(other))).toEqual(other);
  });

  it("maps 5.x module names to the published ones and loads them to the same model's logits", () => {
    expect(publishedName('model.language_model.layers.0.mlp.up_proj.weight')).toBe('model.layers.0.mlp.up_proj.weight');
    expect(publishedName('model.visual.blocks.0.attn.qkv.bias')).toBe('visual.blocks.0.attn.qkv.bias');
    expect(publishedName('lm_head.weight')).toBe('lm_head.weight');
    setBackend('js');
    const m = jitteredVL(6);
    const modular: WeightMap = new Map();
    for (const [name, t] of [...m.lm.weights, ...m.visual.weights]) {
      const to = name.startsWith('visual.')
        ? `model.${name}`
        : name.startsWith('model.')
          ? `model.language_model.${name.slice(6)}`
          : name;
      modular.set(to, { shape: [...t.shape], data: t.toFloat32Array() });
    }
    const loaded = Qwen25VL.fromWeights(TINY_VL, modular, '(5.x layout)');
    const input = visionInput();
    const a = noGrad(() => m.logits(m.hidden(IDS, input)).toFloat32Array());
    const b = noGrad(() => loaded.logits(loaded.hidden(IDS, input)).toFloat32Array());
    expect(b).toEqual(a);
    modular.set('model.visual.blocks.0.attn.extra.weight', { shape: [1], data: new Float32Array(1) });
    expect(() => Qwen25VL.fromWeights(TINY_VL, modular, '(5.x layout)')).toThrow(/visual.blocks.0.attn.extra.weight/);
    m.dispose();
    loaded.dispose();
  });
});
