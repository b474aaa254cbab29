// Model configuration: the Llama / Qwen2 / Qwen3 decoder family, read from and written to Hugging Face
// `config.json` (+ `generation_config.json`) with the same keys transformers uses.
import { ConfigError } from '../util/index.js';
import { didYouMean } from '../util/index.js';

/** The architectures we implement, by Hugging Face `model_type`. */
export const MODEL_TYPES = ['qwen2', 'qwen3', 'llama'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

/** A decoder-only transformer's shape and numerics (camelCase of HF's config.json keys). */
export interface ModelConfig {
  /** HF `model_type`: selects the bias / q-k-norm conventions. */
  modelType: ModelType;
  vocabSize: number;
  hiddenSize: number;
  /** SwiGLU inner width. */
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  /** Grouped-query attention: heads share K/V in groups of numHeads / numKvHeads. */
  numKvHeads: number;
  /** Per-head width. @default hiddenSize / numHeads */
  headDim: number;
  /** @default 1e-6 */
  rmsNormEps: number;
  /** RoPE base. @default 10000 */
  ropeTheta: number;
  /** LM head shares the embedding matrix. */
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
  /** Bias on q/k/v projections (Qwen2: always; Llama/Qwen3: `attention_bias`, which also adds an o_proj bias). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama/Qwen3 with `attention_bias: true`). */
  oBias: boolean;
  /** Per-head RMSNorm of q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  bosTokenId?: number;
  eosTokenId?: number | number[];
  padTokenId?: number;
}

/** The defaults for fields a user may omit when building a model from scratch. */
export function modelConfig(
  partial: Partial<ModelConfig> &
    Pick<ModelConfig, 'vocabSize' | 'hiddenSize' | 'intermediateSize' | 'numLayers' | 'numHeads'>,
): ModelConfig {
  const modelType = partial.modelType ?? 'qwen2';
  const cfg: ModelConfig = {
    modelType,
    numKvHeads: partial.numHeads,
    headDim: Math.floor(partial.hiddenSize / partial.numHeads),
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 4096,
    qkvBias: modelType === 'qwen2' || Boolean(partial.oBias),
    oBias: modelType === 'qwen2' ? false : Boolean(partial.qkvBias),
    qkNorm: modelType === 'qwen3',
    ...partial,
  } as ModelConfig;
  validateConfig(cfg);
  return cfg;
}

/** Throws ConfigError naming the field and the fix when the shape is inconsistent. */
export function validateConfig(c: ModelConfig, source = 'model config'): void {
  if (!(MODEL_TYPES as readonly string[]).includes(c.modelType)) {
    throw new ConfigError(
      `${source}: model_type \`${c.modelType}\` is not supported; supported: ${MODEL_TYPES.join(', ')}.${didYouMean(c.modelType, MODEL_TYPES)}`,
    );
  }
  for (const key of [
    'vocabSize',
    'hiddenSize',
    'intermediateSize',
    'numLayers',
    'numHeads',
    'numKvHeads',
    'headDim',
    'maxPositionEmbeddings',
  ] as const) {
    const v = c[key];
    if (!Number.isInteger(v) || v <= 0)
      throw new ConfigError(`${source}: ${snake(key)} must be a positive integer, got ${String(v)}`);
  }
  if (c.numHeads % c.numKvHeads !== 0) {
    throw new ConfigError(
      `${source}: num_attention_heads (${c.numHeads}) must be a multiple of num_key_value_heads (${c.numKvHeads})`,
    );
  }
  // What Hugging Face's config.json can express: qwen2 = q/k/v bias, no o bias; llama/qwen3 = one
  // `attention_bias` for all four; q/k norm exactly in qwen3.
  if (c.modelType === 'qwen2' && (!c.qkvBias || c.oBias))
    throw new ConfigError(
      `${source}: qwen2 has q/k/v biases and no o_proj bias (got qkvBias ${c.qkvBias}, oBias ${c.oBias}); use model_type llama for other bias layouts`,
    );
  if (c.modelType !== 'qwen2' && c.qkvBias !== c.oBias)
    throw new ConfigError(
      `${source}: ${c.modelType}'s attention_bias sets q/k/v and o_proj biases together (got qkvBias ${c.qkvBias}, oBias ${c.oBias})`,
    );
  if (c.qkNorm !== (c.modelType === 'qwen3'))
    throw new ConfigError(`${source}: q/k norm is part of qwen3 exactly (got qkNorm ${c.qkNorm} for ${c.modelType})`);
  if (c.headDim % 2 !== 0)
    throw new ConfigError(`${source}: head_dim must be even for rotary embeddings, got ${c.headDim}`);
  if (!(c.rmsNormEps > 0)) throw new ConfigError(`${source}: rms_norm_eps must be > 0, got ${c.rmsNormEps}`);
  if (!(c.ropeTheta > 0)) throw new ConfigError(`${source}: rope_theta must be > 0, got ${c.ropeTheta}`);
}

/** camelCase field -> HF key, for messages. */
function snake(key: string): string {
  const special: Record<string, string> = {
    numLayers: 'num_hidden_layers',
    numHeads: 'num_attention_heads',
    numKvHeads: 'num_key_value_heads',
  };
  return special[key] ?? key.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`);
}

/** Parse a Hugging Face `config.json` object (Qwen2/Qwen2.5, Qwen3, Llama). */
export function configFromHF(json: Record<string, unknown>, source = 'config.json'): ModelConfig {
  const type = String(json.model_type ?? '');
  if (!(MODEL_TYPES as readonly string[]).includes(type)) {
    throw new ConfigError(
      `${source}: model_type \`${type || '(missing)'}\` is not supported; supported: ${MODEL_TYPES.join(', ')}.${didYouMean(type, MODEL_TYPES)}`,
    );
  }
  const num = (key: string, fallback?: number): number => {
    const v = json[key];
    if (v === undefined || v === null) {
      if (fallback === undefined) throw new ConfigError(`${source}: missing required key \`${key}\``);
      return fallback;
    }
    if (typeof v !== 'number')
      throw new ConfigError(`${source}: \`${key}\` must be a number, got ${JSON.stringify(v)}`);
    return v;
  };
  const act = json.hidden_act ?? 'silu';
  if (act !== 'silu')
    throw new ConfigError(`${source}: hidden_act \`${String(act)}\` is not supported (only silu / SwiGLU)`);
  // transformers v5 writes `rope_parameters: {rope_type, rope_theta}`; v4 writes `rope_theta` (+ `rope_scaling`).
  const rope = (json.rope_parameters ?? json.rope_scaling ?? null) as Record<string, unknown> | null;
  const ropeType = rope ? String(rope.rope_type ?? rope.type ?? 'default') : 'default';
  if (ropeType !== 'default')
    throw new ConfigError(
      `${source}: RoPE scaling \`${ropeType}\` (${JSON.stringify(rope)}) is not supported, only plain RoPE; remove it for short contexts`,
    );
  const ropeTheta = typeof rope?.rope_theta === 'number' ? rope.rope_theta : undefined;
  if (json.mlp_bias) throw new ConfigError(`${source}: mlp_bias: true is not supported`);
  if (json.use_sliding_window) throw new ConfigError(`${source}: use_sliding_window: true is not supported`);
  const hidden = num('hidden_size');
  const heads = num('num_attention_heads');
  const attnBias = Boolean(json.attention_bias ?? false);
  const modelType = type as ModelType;
  const cfg: ModelConfig = {
    modelType,
    vocabSize: num('vocab_size'),
    hiddenSize: hidden,
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads: heads,
    numKvHeads: num('num_key_value_heads', heads),
    headDim: num('head_dim', Math.floor(hidden / heads)),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta: ropeTheta ?? num('rope_theta', 10000),
    tieWordEmbeddings: Boolean(json.tie_word_embeddings ?? false),
    maxPositionEmbeddings: num('max_position_embeddings', 4096),
    qkvBias: modelType === 'qwen2' ? true : attnBias,
    oBias: modelType === 'qwen2' ? false : attnBias,
    qkNorm: modelType === 'qwen3',
  };
  if (typeof json.bos_token_id === 'number') cfg.bosTokenId = json.bos_token_id;
  if (typeof json.eos_token_id === 'number' || Array.isArray(json.eos_token_id))
    cfg.eosTokenId = json.eos_token_id as number | number[];
  if (typeof json.pad_token_id === 'number') cfg.padTokenId = json.pad_token_id;
  validateConfig(cfg, source);
  return cfg;
}

const ARCH: Record<ModelType, string> = {
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  llama: 'LlamaForCausalLM',
};

/** The `config.json` transformers needs to load our weights. */
export function configToHF(c: ModelConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {
    architectures: [ARCH[c.modelType]],
    model_type: c.modelType,
    vocab_size: c.vocabSize,
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    hidden_act: 'silu',
    rms_norm_eps: c.rmsNormEps,
    rope_theta: c.ropeTheta,
    rope_scaling: null,
    tie_word_embeddings: c.tieWordEmbeddings,
    max_position_embeddings: c.maxPositionEmbeddings,
    attention_dropout: 0,
    initializer_range: 0.02,
    use_cache: true,
    torch_dtype: 'float32',
  };
  if (c.modelType !== 'qwen2') out.attention_bias = c.qkvBias;
  if (c.modelType === 'qwen2') {
    out.use_sliding_window = false;
    out.sliding_window = c.maxPositionEmbeddings;
    out.max_window_layers = c.numLayers;
  }
  if (c.modelType === 'llama') out.mlp_bias = false;
  if (c.bosTokenId !== undefined) out.bos_token_id = c.bosTokenId;
  if (c.eosTokenId !== undefined) out.eos_token_id = c.eosTokenId;
  if (c.padTokenId !== undefined) out.pad_token_id = c.padTokenId;
  return out;
}

/** `generation_config.json` (token ids only; sampling settings live in our own config). */
export function generationConfigToHF(c: ModelConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (c.bosTokenId !== undefined) out.bos_token_id = c.bosTokenId;
  if (c.eosTokenId !== undefined) out.eos_token_id = c.eosTokenId;
  if (c.padTokenId !== undefined) out.pad_token_id = c.padTokenId;
  return out;
}

/** Parameter count (without LoRA adapters or a value head). */
export function countParameters(c: ModelConfig): number {
  const { hiddenSize: C, headDim: D, numHeads: H, numKvHeads: K, intermediateSize: F, vocabSize: V } = c;
  const attn =
    C * H * D +
    2 * C * K * D +
    H * D * C +
    (c.qkvBias ? H * D + 2 * K * D : 0) +
    (c.oBias ? C : 0) +
    (c.qkNorm ? 2 * D : 0);
  const layer = attn + 3 * C * F + 2 * C;
  return V * C + c.numLayers * layer + C + (c.tieWordEmbeddings ? 0 : V * C);
}
