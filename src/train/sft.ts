// Supervised fine-tuning on solver demonstrations (the warm start of StarPO): cross-entropy on the
// demonstrated (loss-mask) tokens only, AdamW with warmup + cosine, periodic validation through the agent loop.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  collate,
  EnvGroups,
  enginePolicy,
  rollout,
  type AgentConfig,
  type TokenBatch,
  type TrainingSample,
} from '../agent/index.js';
import type { TrainableEngine, ForwardResult, OutputGradients } from '../engine/index.js';
import { modelConfig, vlConfigFromHF, type ModelConfig, type VLConfig } from '../model/index.js';
import { IMAGE_PAD, VISION_END, VISION_START, type Tokenizer, type VisionProcessor } from '../tokenizer/index.js';
import { ConfigError, Rng, didYouMean, writeFileAt } from '../util/index.js';
import { lrAt } from './lr-schedule.js';

/**
 * Shapes for models trained from scratch (`ragen sft --init <name>`), Qwen2 layout with tied
 * embeddings; `vocabSize` comes from the tokenizer. Parameter counts are for the tiny tokenizer (1024 ids).
 */
export const SIZE_PRESETS = {
  /** ~0.2M parameters: tests and smoke runs. */
  micro: { hiddenSize: 32, intermediateSize: 96, numLayers: 2, numHeads: 2 },
  /** ~1.1M parameters. */
  tiny: { hiddenSize: 128, intermediateSize: 384, numLayers: 4, numHeads: 4 },
  /** ~2.4M parameters. */
  small: { hiddenSize: 192, intermediateSize: 512, numLayers: 5, numHeads: 4 },
} as const;
export type SizePreset = keyof typeof SIZE_PRESETS;

/**
 * The model config of a size preset for a tokenizer of `vocabSize` ids; `ids` (the tokenizer's end and padding ids)
 * go into config.json so that transformers' `generate` stops where ours does.
 */
export function presetModelConfig(
  name: string,
  vocabSize: number,
  maxPositions = 2048,
  ids: { eosTokenId?: number; padTokenId?: number } = {},
): ModelConfig {
  const names = Object.keys(SIZE_PRESETS);
  if (!names.includes(name))
    throw new ConfigError(
      `Unknown model size preset \`${name}\`.${didYouMean(name, names)} Known: ${names.join(', ')}.`,
    );
  return modelConfig({
    modelType: 'qwen2',
    vocabSize,
    maxPositionEmbeddings: maxPositions,
    ...SIZE_PRESETS[name as SizePreset],
    ...ids,
  });
}

/**
 * Vision-language shapes for `ragen sft --init <name>` (Qwen2.5-VL layout): a size preset's language model with
 * multimodal rotary positions, and a vision tower of 14-pixel patches merged 2 x 2 into its width. The tokenizer must
 * hold the vision tokens (models/tokenizer-tiny-vl). Parameter counts are for that tokenizer (1029 ids).
 */
export const VL_SIZE_PRESETS = {
  /** ~0.2M parameters: tests and smoke runs. */
  'micro-vl': { text: 'micro', vision: { depth: 1, hiddenSize: 16, intermediateSize: 32, numHeads: 2 } },
  /** ~1.2M parameters: `models/ragen-tiny-vl`. */
  'tiny-vl': { text: 'tiny', vision: { depth: 2, hiddenSize: 64, intermediateSize: 128, numHeads: 2 } },
} as const satisfies Record<string, { text: SizePreset; vision: Record<string, number> }>;

/**
 * The image processor of the `VL_SIZE_PRESETS` models: Qwen2.5-VL's patches and merge, images resized to at most
 * 112 x 112 pixels (16 vision tokens; the visual envs' 4 x 4 and 6 x 6 grids take 4 and 9).
 */
export const SFT_VL_PROCESSOR: VisionProcessor = {
  patchSize: 14,
  mergeSize: 2,
  minPixels: 56 * 56,
  maxPixels: 112 * 112,
};

/** The Qwen2.5-VL config of a `VL_SIZE_PRESETS` shape for `tokenizer` (which must hold the vision tokens). */
export function presetVLConfig(name: string, tokenizer: Tokenizer, maxPositions = 2048): VLConfig {
  const preset = VL_SIZE_PRESETS[name as keyof typeof VL_SIZE_PRESETS];
  if (!preset)
    throw new ConfigError(
      `Unknown vision-language size preset \`${name}\`.${didYouMean(name, Object.keys(VL_SIZE_PRESETS))} Known: ${Object.keys(VL_SIZE_PRESETS).join(', ')}.`,
    );
  const id = (token: string) => {
    const v = tokenizer.tokenToId(token);
    if (v === undefined)
      throw new ConfigError(
        `--init ${name} needs a tokenizer with the vision token ${token}; \`${tokenizer.name}\` has none. Use models/tokenizer-tiny-vl (\`--tokenizer models/tokenizer-tiny-vl\`).`,
      );
    return v;
  };
  const text = { ...SIZE_PRESETS[preset.text] };
  const half = text.hiddenSize / text.numHeads / 2;
  const hw = Math.floor((3 * half) / 8); // Qwen2.5-VL's split of 64 frequencies: 16 temporal, 24 height, 24 width
  return vlConfigFromHF({
    model_type: 'qwen2_5_vl',
    vocab_size: tokenizer.vocabSize,
    hidden_size: text.hiddenSize,
    intermediate_size: text.intermediateSize,
    num_hidden_layers: text.numLayers,
    num_attention_heads: text.numHeads,
    num_key_value_heads: text.numHeads,
    max_position_embeddings: maxPositions,
    tie_word_embeddings: true,
    // the tokenizer's ids, so transformers' generate stops where ours does (its defaults are Qwen's 151k-vocab ids)
    eos_token_id: tokenizer.eosTokenId,
    pad_token_id: tokenizer.padTokenId,
    rope_scaling: { type: 'mrope', mrope_section: [half - 2 * hw, hw, hw] },
    image_token_id: id(IMAGE_PAD),
    video_token_id: id('<|video_pad|>'),
    vision_start_token_id: id(VISION_START),
    vision_end_token_id: id(VISION_END),
    vision_token_id: id('<|vision_pad|>'),
    vision_config: {
      depth: preset.vision.depth,
      hidden_size: preset.vision.hiddenSize,
      intermediate_size: preset.vision.intermediateSize,
      num_heads: preset.vision.numHeads,
      out_hidden_size: text.hiddenSize,
      patch_size: 14,
      window_size: 112,
      fullatt_block_indexes: [preset.vision.depth - 1],
    },
  });
}

/** Settings of one SFT run. */
export interface SftOptions {
  /** Optimiser steps. */
  steps: number;
  /** Training sequences per step. */
  batch: number;
  /** Peak learning rate (linear warmup, cosine to `lr * minLrRatio`). */
  lr: number;
  /** @default min(100, steps / 10) */
  warmupSteps?: number;
  /** @default 0.1 */
  minLrRatio?: number;
  /** @default 0.01 */
  weightDecay?: number;
  /** @default 1 */
  maxGradNorm?: number;
  /** Shuffling seed. @default 0 */
  seed?: number;
  /** Save a checkpoint (and validate, with `val`) every this many steps; 0 = only at the end. @default 0 */
  valEvery?: number;
  /** Validation rollouts: env tags and their configs, groups per tag, seeds, temperature. */
  val?: {
    envs: readonly string[];
    envConfig?: Readonly<Record<string, Record<string, unknown>>>;
    groups: number;
    seed: number;
    temperature: number;
  };
  /** Output directory: the final model, `checkpoints/step-N/` at each validation, `sft_log.jsonl`. */
  out?: string;
  /** Progress: called after each step with its numbers, and with each validation. */
  onStep?: (
    step: number,
    stats: { loss: number; lr: number; gradNorm: number; seconds: number; tokens: number },
  ) => void;
  onVal?: (step: number, success: Record<string, number>, formatError: Record<string, number>) => void;
}

/** What an SFT run reports. */
export interface SftResult {
  steps: number;
  /** Mean loss of the first and the last min(10, steps) steps. */
  firstLoss: number;
  finalLoss: number;
  seconds: number;
  /** The last validation's success per env tag (empty without `val`). */
  valSuccess: Record<string, number>;
  history: { step: number; loss: number }[];
}

/** Mean cross-entropy of the masked tokens of a token batch and its gradient (token-aligned, the engine's layout). */
export function maskedCrossEntropy(batch: TokenBatch): {
  count: number;
  grad: (out: ForwardResult) => OutputGradients;
  loss: () => number;
} {
  const { B, T, lossMask } = batch;
  let count = 0;
  for (let i = 0; i < B * T; i++) if (i % T > 0 && lossMask[i]) count++; // token 0 is scored by nothing
  if (count === 0)
    throw new ConfigError(
      'SFT batch has no loss tokens: every sample needs demonstrated (mask 1) tokens after its first position.',
    );
  let loss = NaN;
  return {
    count,
    loss: () => loss,
    // token-aligned: the gradient of log p(token t) is -mask[t] / count
    grad: (out) => {
      let total = 0;
      const logprobs = new Float32Array(B * T);
      for (let i = 0; i < B * T; i++) {
        if (i % T > 0 && lossMask[i]) {
          logprobs[i] = -1 / count;
          total -= out.logprobs[i]!;
        }
      }
      loss = total / count;
      return { logprobs };
    },
  };
}

/**
 * Validation: one rollout of `val.groups` seeds per tag with the engine's policy; success and format errors per tag.
 */
export async function sftValidate(
  engine: TrainableEngine,
  tokenizer: Tokenizer,
  agent: AgentConfig,
  val: NonNullable<SftOptions['val']>,
): Promise<{ success: Record<string, number>; formatError: Record<string, number> }> {
  const groups = new EnvGroups({
    tags: val.envs.map((env) => ({ env, nGroups: val.groups, config: { ...(val.envConfig?.[env] ?? {}) } })),
    groupSize: 1,
    mode: 'val',
    seed: val.seed,
  });
  const batch = await rollout({
    groups,
    policy: enginePolicy(engine, tokenizer, agent, { temperature: val.temperature, seed: val.seed }),
    tokenizer,
    agent,
  });
  await groups.close();
  const success: Record<string, number> = {};
  const formatError: Record<string, number> = {};
  for (const [tag, m] of Object.entries(batch.metrics)) {
    success[tag] = m.success ?? NaN;
    formatError[tag] = m.format_error_rate ?? NaN;
  }
  return { success, formatError };
}

/** Train `engine`'s policy on `samples` (their loss masks mark the demonstrated tokens). */
export async function runSft(
  engine: TrainableEngine,
  tokenizer: Tokenizer,
  agent: AgentConfig,
  samples: readonly TrainingSample[],
  opts: SftOptions,
): Promise<SftResult> {
  if (samples.length === 0) throw new ConfigError('SFT needs at least one demonstration sample.');
  if (!(opts.steps >= 1) || !(opts.batch >= 1))
    throw new ConfigError(`SFT needs steps >= 1 and batch >= 1, got steps ${opts.steps}, batch ${opts.batch}.`);
  const rng = new Rng(opts.seed ?? 0);
  const schedule = {
    kind: 'warmup_cosine' as const,
    warmupSteps: opts.warmupSteps ?? Math.min(100, Math.floor(opts.steps / 10)),
    minLrRatio: opts.minLrRatio ?? 0.1,
    totalSteps: opts.steps,
  };
  const logPath = opts.out ? join(opts.out, 'sft_log.jsonl') : undefined;
  if (opts.out) {
    writeFileAt(logPath!, '', 'create the SFT log', '--out');
  }
  const log = (rec: Record<string, unknown>) => logPath && appendFileSync(logPath, JSON.stringify(rec) + '\n');
  let order: number[] = [];
  const next = (): TrainingSample => {
    if (order.length === 0) order = rng.shuffle(samples.map((_, i) => i));
    return samples[order.pop()!]!;
  };
  const history: { step: number; loss: number }[] = [];
  let valSuccess: Record<string, number> = {};
  const validate = async (step: number) => {
    if (!opts.val) return;
    const v = await sftValidate(engine, tokenizer, agent, opts.val);
    valSuccess = v.success;
    opts.onVal?.(step, v.success, v.formatError);
    log({ step, val_success: v.success, val_format_error: v.formatError });
  };
  const t0 = performance.now();
  for (let step = 1; step <= opts.steps; step++) {
    const ts = performance.now();
    const batch = Array.from({ length: Math.min(opts.batch, samples.length) }, next);
    const tokens = collate(batch, tokenizer.padTokenId);
    const ce = maskedCrossEntropy(tokens);
    await engine.backward(tokens, { role: 'policy' }, ce.grad);
    const lr = lrAt(step, opts.lr, schedule);
    const r = await engine.optimizerStep('policy', {
      lr,
      weightDecay: opts.weightDecay ?? 0.01,
      maxGradNorm: opts.maxGradNorm ?? 1,
    });
    const loss = ce.loss();
    history.push({ step, loss });
    const seconds = (performance.now() - ts) / 1000;
    opts.onStep?.(step, {
      loss,
      lr,
      gradNorm: r.gradNorm,
      seconds,
      tokens: batch.reduce((a, s) => a + s.ids.length, 0),
    });
    log({ step, loss, lr, grad_norm: r.gradNorm, skipped: r.skipped, seconds });
    const valEvery = opts.valEvery ?? 0;
    if (valEvery > 0 && step % valEvery === 0 && step < opts.steps) {
      if (opts.out) await engine.save(join(opts.out, 'checkpoints', `step-${step}`));
      await validate(step);
    }
  }
  if (opts.out) await engine.save(opts.out); // saved before validating: a failure there loses no training
  await validate(opts.steps);
  const k = Math.min(10, history.length);
  const mean = (xs: { loss: number }[]) => xs.reduce((a, h) => a + h.loss, 0) / xs.length;
  return {
    steps: opts.steps,
    firstLoss: mean(history.slice(0, k)),
    finalLoss: mean(history.slice(-k)),
    seconds: (performance.now() - t0) / 1000,
    valSuccess,
    history,
  };
}
