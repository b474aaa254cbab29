// Qwen2.5-VL's configuration: the Qwen2 language model, the vision tower and the multimodal rotary sections, read from
// a Hugging Face config.json in either layout transformers writes (5.x: `text_config` / `vision_config`; the published
// 4.x files: the text keys at the top level, `rope_scaling.mrope_section`).
import { ConfigError } from '../util/index.js';
import { configFromHF, configToHF, type ModelConfig } from './config.js';

/** The vision tower's shape (config.json `vision_config`, camelCase). */
export interface VisionConfig {
  /** Vision blocks. */
  depth: number;
  hiddenSize: number;
  /** SwiGLU inner width of each block. */
  intermediateSize: number;
  numHeads: number;
  /** Width of the merged patch embeddings: the language model's hidden size. */
  outHiddenSize: number;
  patchSize: number;
  spatialMergeSize: number;
  temporalPatchSize: number;
  inChannels: number;
  /** Side of an attention window in pixels (112: 4 x 4 merged patches). */
  windowSize: number;
  /** Blocks that attend over the whole image; the others attend within windows. */
  fullattBlockIndexes: number[];
  /** 2-D rotary base. @default 10000 */
  ropeTheta: number;
}

/** A Qwen2.5-VL model: its language model, vision tower, and the ids of its vision tokens. */
export interface VLConfig {
  text: ModelConfig;
  vision: VisionConfig;
  /** Rotary frequencies of each head given to the temporal, height and width positions (sums to head_dim / 2). */
  mropeSection: [number, number, number];
  imageTokenId: number;
  videoTokenId: number;
  visionStartTokenId: number;
  visionEndTokenId: number;
  /** `<|vision_pad|>` (config.json's `vision_token_id`). */
  visionPadTokenId: number;
}

/** Parse a Qwen2.5-VL config.json; throws ConfigError naming the key and the fix. */
export function vlConfigFromHF(json: Record<string, unknown>, source = 'config.json'): VLConfig {
  if (json.model_type !== 'qwen2_5_vl')
    throw new ConfigError(
      `${source}: model_type \`${String(json.model_type)}\` is not a vision-language model this engine runs; expected qwen2_5_vl (Qwen2.5-VL).`,
    );
  const textJson = (json.text_config ?? json) as Record<string, unknown>;
  const rope = (textJson.rope_parameters ?? textJson.rope_scaling ?? json.rope_scaling ?? {}) as Record<
    string,
    unknown
  >;
  const section = rope.mrope_section;
  if (!Array.isArray(section) || section.length !== 3 || !section.every((s) => Number.isInteger(s) && s > 0))
    throw new ConfigError(
      `${source}: rope_parameters.mrope_section must be three positive integers (temporal, height, width), got ${JSON.stringify(section)}`,
    );
  const ropeTheta = (rope.rope_theta ?? textJson.rope_theta ?? 10000) as number;
  const text = configFromHF(
    {
      ...textJson,
      model_type: 'qwen2',
      rope_parameters: { rope_type: 'default', rope_theta: ropeTheta },
      rope_scaling: null,
      tie_word_embeddings: json.tie_word_embeddings ?? textJson.tie_word_embeddings ?? false,
    },
    `${source} (text_config)`,
  );
  const [t, h, w] = section as [number, number, number];
  if (2 * (t + h + w) !== text.headDim)
    throw new ConfigError(
      `${source}: mrope_section [${section.join(', ')}] must sum to head_dim / 2 = ${text.headDim / 2}`,
    );
  const v = (json.vision_config ?? {}) as Record<string, unknown>;
  const num = (key: string, fallback?: number): number => {
    const x = v[key] ?? fallback;
    if (typeof x !== 'number' || !Number.isInteger(x) || x <= 0)
      throw new ConfigError(`${source}: vision_config.${key} must be a positive integer, got ${JSON.stringify(x)}`);
    return x;
  };
  const act = v.hidden_act ?? 'silu';
  if (act !== 'silu')
    throw new ConfigError(`${source}: vision_config.hidden_act \`${String(act)}\` is not supported (only silu)`);
  const visionRope = (v.rope_parameters ?? {}) as Record<string, unknown>;
  const vision: VisionConfig = {
    depth: num('depth'),
    hiddenSize: num('hidden_size'),
    intermediateSize: num('intermediate_size'),
    numHeads: num('num_heads'),
    outHiddenSize: num('out_hidden_size', text.hiddenSize),
    patchSize: num('patch_size', 14),
    spatialMergeSize: num('spatial_merge_size', 2),
    temporalPatchSize: num('temporal_patch_size', 2),
    inChannels: num('in_channels', 3),
    windowSize: num('window_size', 112),
    fullattBlockIndexes: (v.fullatt_block_indexes ?? [7, 15, 23, 31]) as number[],
    ropeTheta: typeof visionRope.rope_theta === 'number' ? visionRope.rope_theta : 10000,
  };
  const headDim = vision.hiddenSize / vision.numHeads;
  if (!Number.isInteger(headDim) || headDim % 4 !== 0)
    throw new ConfigError(
      `${source}: vision_config hidden_size / num_heads = ${headDim} must be a multiple of 4 (2-D rotary halves)`,
    );
  if (vision.outHiddenSize !== text.hiddenSize)
    throw new ConfigError(
      `${source}: vision_config.out_hidden_size ${vision.outHiddenSize} must equal the language model's hidden_size ${text.hiddenSize}`,
    );
  if (vision.inChannels !== 3) throw new ConfigError(`${source}: vision_config.in_channels must be 3 (RGB)`);
  const id = (key: string, fallback: number): number =>
    typeof json[key] === 'number' ? (json[key] as number) : fallback;
  return {
    text,
    vision,
    mropeSection: [t, h, w],
    imageTokenId: id('image_token_id', 151655),
    videoTokenId: id('video_token_id', 151656),
    visionStartTokenId: id('vision_start_token_id', 151652),
    visionEndTokenId: id('vision_end_token_id', 151653),
    visionPadTokenId: id('vision_token_id', 151654),
  };
}

/**
 * A Qwen2.5-VL config.json in the Hub's published layout (the language model's keys at the top level,
 * `rope_scaling.mrope_section`, `vision_config`), which transformers, the torch worker and `vlConfigFromHF` read.
 */
export function vlConfigToHF(c: VLConfig): Record<string, unknown> {
  const v = c.vision;
  return {
    ...configToHF(c.text),
    architectures: ['Qwen2_5_VLForConditionalGeneration'],
    model_type: 'qwen2_5_vl',
    rope_scaling: { type: 'mrope', mrope_section: [...c.mropeSection] },
    image_token_id: c.imageTokenId,
    video_token_id: c.videoTokenId,
    vision_start_token_id: c.visionStartTokenId,
    vision_end_token_id: c.visionEndTokenId,
    vision_token_id: c.visionPadTokenId,
    vision_config: {
      depth: v.depth,
      hidden_act: 'silu',
      hidden_size: v.hiddenSize,
      intermediate_size: v.intermediateSize,
      num_heads: v.numHeads,
      in_chans: v.inChannels,
      out_hidden_size: v.outHiddenSize,
      patch_size: v.patchSize,
      spatial_merge_size: v.spatialMergeSize,
      spatial_patch_size: v.patchSize,
      temporal_patch_size: v.temporalPatchSize,
      window_size: v.windowSize,
      fullatt_block_indexes: [...v.fullattBlockIndexes],
      ...(v.ropeTheta === 10000 ? {} : { rope_parameters: { rope_theta: v.ropeTheta } }),
    },
  };
}
