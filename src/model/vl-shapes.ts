// The tensors of a Qwen2.5-VL checkpoint (Qwen2_5_VLForConditionalGeneration in the Hub's layout): the language
// model's as a Qwen2 decoder's (`model.*`, `lm_head`) plus the vision tower's (`visual.*`), for `ragen model init`.
// The torch worker's python/ragen_torch/vision.py names the same tensors.
import { ConfigError } from '../util/index.js';
import { configFromHF, type ModelConfig } from './config.js';
import { weightShapes } from './transformer.js';

/** Whether a config.json is a vision-language model's (Qwen2.5-VL). */
export function isVisionLanguageConfig(hf: Record<string, unknown>): boolean {
  return hf['model_type'] === 'qwen2_5_vl';
}

/** The language model of a Qwen2.5-VL config.json (flat, as the Hub publishes it): a Qwen2 decoder's config. */
export function vlTextConfig(hf: Record<string, unknown>, source = 'config.json'): ModelConfig {
  const { vision_config: _v, rope_scaling: _r, text_config: nested, ...flat } = hf;
  if (nested !== undefined)
    throw new ConfigError(
      `${source}: a nested text_config (transformers 5's save layout) is not read here; give the Hub's flat config.json`,
    );
  return configFromHF({ ...flat, model_type: 'qwen2' }, source);
}

/** `[name, shape]` of every tensor of a Qwen2.5-VL config.json, language model first, then the vision tower. */
export function vlWeightShapes(hf: Record<string, unknown>, source = 'config.json'): Map<string, number[]> {
  const shapes = weightShapes(vlTextConfig(hf, source));
  const v = (hf['vision_config'] ?? {}) as Record<string, unknown>;
  const int = (key: string, fallback?: number): number => {
    const x = v[key] ?? fallback;
    if (typeof x !== 'number' || !Number.isInteger(x))
      throw new ConfigError(`${source}: vision_config.${key} must be an integer (got ${JSON.stringify(x)})`);
    return x;
  };
  const C = int('hidden_size');
  const F = int('intermediate_size');
  const out = int('out_hidden_size');
  const merge = int('spatial_merge_size', 2);
  const patch = int('patch_size', 14);
  const channels = int('in_channels', (v['in_chans'] as number | undefined) ?? 3);
  shapes.set('visual.patch_embed.proj.weight', [C, channels, int('temporal_patch_size', 2), patch, patch]);
  for (let i = 0; i < int('depth'); i++) {
    const b = `visual.blocks.${i}`;
    shapes.set(`${b}.norm1.weight`, [C]);
    shapes.set(`${b}.norm2.weight`, [C]);
    shapes.set(`${b}.attn.qkv.weight`, [3 * C, C]);
    shapes.set(`${b}.attn.qkv.bias`, [3 * C]);
    shapes.set(`${b}.attn.proj.weight`, [C, C]);
    shapes.set(`${b}.attn.proj.bias`, [C]);
    for (const m of ['gate_proj', 'up_proj']) {
      shapes.set(`${b}.mlp.${m}.weight`, [F, C]);
      shapes.set(`${b}.mlp.${m}.bias`, [F]);
    }
    shapes.set(`${b}.mlp.down_proj.weight`, [C, F]);
    shapes.set(`${b}.mlp.down_proj.bias`, [C]);
  }
  const merged = C * merge * merge;
  shapes.set('visual.merger.ln_q.weight', [C]);
  shapes.set('visual.merger.mlp.0.weight', [merged, merged]);
  shapes.set('visual.merger.mlp.0.bias', [merged]);
  shapes.set('visual.merger.mlp.2.weight', [out, merged]);
  shapes.set('visual.merger.mlp.2.bias', [out]);
  return shapes;
}
