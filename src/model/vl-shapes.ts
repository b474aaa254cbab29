// The tensors of a vision-language checkpoint for `ragen model init`: Qwen2.5-VL (the Hub's layout: `model.*`,
// `visual.*`, `lm_head`) and Qwen3-VL (its own: `model.language_model.*`, `model.visual.*`, `lm_head`); the language
// model's as a Qwen2 / Qwen3 decoder's, then the vision tower's. The torch worker's python/ragen_torch/vision.py and
// vision_qwen3.py name the same tensors.
import { ConfigError } from '../util/index.js';
import { configFromHF, type ModelConfig } from './config.js';
import { weightShapes } from './transformer.js';

/** Whether a config.json is a vision-language model's (Qwen2.5-VL or Qwen3-VL). */
export function isVisionLanguageConfig(hf: Record<string, unknown>): boolean {
  return hf['model_type'] === 'qwen2_5_vl' || hf['model_type'] === 'qwen3_vl';
}

/**
 * The language model of a VL config.json as a decoder's config: Qwen2.5-VL's flat keys (Qwen2 layers), Qwen3-VL's
 * `text_config` (Qwen3 layers); the multimodal rotary settings are dropped (the text-only view of the positions).
 */
export function vlTextConfig(hf: Record<string, unknown>, source = 'config.json'): ModelConfig {
  if (hf['model_type'] === 'qwen3_vl') {
    const text = hf['text_config'] as Record<string, unknown> | undefined;
    if (!text) throw new ConfigError(`${source}: a qwen3_vl config needs a text_config object`);
    const { rope_scaling: _r, rope_parameters: _p, ...rest } = text;
    return configFromHF(
      { ...rest, model_type: 'qwen3', tie_word_embeddings: hf['tie_word_embeddings'] ?? rest['tie_word_embeddings'] },
      source,
    );
  }
  const { vision_config: _v, rope_scaling: _r, text_config: nested, ...flat } = hf;
  if (nested !== undefined)
    throw new ConfigError(
      `${source}: a nested text_config (transformers 5's save layout) is not read here; give the Hub's flat config.json`,
    );
  return configFromHF({ ...flat, model_type: 'qwen2' }, source);
}

/** `[name, shape]` of every tensor of a VL config.json, language model first, then the vision tower. */
export function vlWeightShapes(hf: Record<string, unknown>, source = 'config.json'): Map<string, number[]> {
  const qwen3 = hf['model_type'] === 'qwen3_vl';
  const shapes = new Map<string, number[]>();
  for (const [name, shape] of weightShapes(vlTextConfig(hf, source)))
    shapes.set(qwen3 && name.startsWith('model.') ? `model.language_model.${name.slice(6)}` : name, shape);
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
  const patch = int('patch_size', qwen3 ? 16 : 14);
  const channels = int('in_channels', (v['in_chans'] as number | undefined) ?? 3);
  const merged = C * merge * merge;
  const p = qwen3 ? 'model.visual' : 'visual';
  const linear = (name: string, nOut: number, nIn: number) => {
    shapes.set(`${name}.weight`, [nOut, nIn]);
    shapes.set(`${name}.bias`, [nOut]);
  };
  const norm = (name: string, n: number) => {
    shapes.set(`${name}.weight`, [n]);
    if (qwen3) shapes.set(`${name}.bias`, [n]); // LayerNorm (Qwen3-VL) or RMSNorm (Qwen2.5-VL)
  };
  shapes.set(`${p}.patch_embed.proj.weight`, [C, channels, int('temporal_patch_size', 2), patch, patch]);
  if (qwen3) {
    shapes.set(`${p}.patch_embed.proj.bias`, [C]);
    shapes.set(`${p}.pos_embed.weight`, [int('num_position_embeddings', 2304), C]);
  }
  for (let i = 0; i < int('depth'); i++) {
    const b = `${p}.blocks.${i}`;
    norm(`${b}.norm1`, C);
    norm(`${b}.norm2`, C);
    linear(`${b}.attn.qkv`, 3 * C, C);
    linear(`${b}.attn.proj`, C, C);
    if (qwen3) {
      linear(`${b}.mlp.linear_fc1`, F, C);
      linear(`${b}.mlp.linear_fc2`, C, F);
    } else {
      linear(`${b}.mlp.gate_proj`, F, C);
      linear(`${b}.mlp.up_proj`, F, C);
      linear(`${b}.mlp.down_proj`, C, F);
    }
  }
  if (!qwen3) {
    shapes.set(`${p}.merger.ln_q.weight`, [C]);
    linear(`${p}.merger.mlp.0`, merged, merged);
    linear(`${p}.merger.mlp.2`, out, merged);
    return shapes;
  }
  const merger = (m: string, normWidth: number) => {
    norm(`${m}.norm`, normWidth);
    linear(`${m}.linear_fc1`, merged, merged);
    linear(`${m}.linear_fc2`, out, merged);
  };
  merger(`${p}.merger`, C);
  const deepstack = (v['deepstack_visual_indexes'] ?? []) as unknown[];
  deepstack.forEach((_, i) => merger(`${p}.deepstack_merger_list.${i}`, merged));
  return shapes;
}
