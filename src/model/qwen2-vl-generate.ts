// Sampling and teacher-forced log-probs for Qwen2.5-VL prompts with images: each prompt (its image embeddings and 3-D
// positions) prefilled into its row of a KV cache, then the batch decoded one token per step at position
// `index + delta` on every axis (what transformers' generate does after the first step), and the per-token outputs of
// a sequence for training.
import { concat, embedding, logprobOfTarget, mul, narrow, noGrad, tensor, type Tensor, tidy } from '../tensor/index.js';
import { ConfigError, type Rng } from '../util/index.js';
import type { ValueHead } from './forward.js';
import { generate, generateYielding, type Completion, type GenerateOptions, type PromptPrefill } from './generate.js';
import { KVCache } from './kv-cache.js';
import { mropeRotary } from './qwen2-vl-rotary.js';
import type { Qwen25VL, VisionInput } from './qwen2-vl.js';
import { sampledTargets, suppressLogits } from './suppress.js';
import { tokenStats } from './token-stats.js';

/**
 * log p(ids[t] | ids[< t], images) for t = 1..T-1, (T - 1), differentiable in the language model's trainable
 * parameters (its LoRA adapters), under the distribution without the vision tokens (suppress.ts; their own targets,
 * the prompt's image tokens, get 0). The images are prompt tokens: never targets a caller should train on.
 */
export function vlTokenLogprobs(model: Qwen25VL, ids: Int32Array, images?: VisionInput, dropoutRng?: Rng): Tensor {
  const T = ids.length;
  if (T < 2) throw new ConfigError(`vlTokenLogprobs needs at least 2 tokens, got ${T}`);
  const hidden = model.hidden(ids, images, { dropoutRng }); // (T, C)
  const off = model.lm.suppressedTokens;
  const logits = model.logits(narrow(hidden, 0, 0, T - 1)); // (T-1, V)
  const targets = ids.slice(1);
  if (!off) return logprobOfTarget(logits, targets);
  return mul(logprobOfTarget(suppressLogits(logits, off), targets), tensor(sampledTargets(targets, off)));
}

/** What `vlTokenOutputs` computes and how (`TokenForwardOptions`' meanings). */
export interface VLTokenOutputOptions {
  logprobs: boolean;
  entropy: boolean;
  /** Critic values from this head on the language model's final hidden states. */
  valueHead?: ValueHead;
  dropoutRng?: Rng;
  checkpoint?: boolean;
}

/**
 * The teacher-forced outputs of one sequence with its images, each (T - 1) for the T - 1 positions that predict
 * tokens 1..T-1: log p(ids[t] | ids[< t], images), the entropy of that next-token distribution, and the value head on
 * its hidden state, without the vision tokens as `tokenForward` gives a text row of the same model; differentiable in every trainable parameter (LoRA, the
 * language model, the tower's weights when they require gradients, the head).
 */
export function vlTokenOutputs(
  model: Qwen25VL,
  ids: Int32Array,
  images: VisionInput | undefined,
  opts: VLTokenOutputOptions,
): { logprobs?: Tensor; entropy?: Tensor; values?: Tensor } {
  if (ids.length < 2) throw new ConfigError(`vlTokenOutputs needs at least 2 tokens, got ${ids.length}`);
  const { starts: _, ...out } = vlBatchOutputs(model, [{ ids, images }], opts);
  return out;
}

/**
 * `vlTokenOutputs` of several sequences with their images in one pass: the rows right-padded to the longest (B, T),
 * each row's input embeddings and 3-D rotary tables its own, the language model run on the batch (causal: a row's
 * tokens never see its padding). Each output is (N) over the rows' positions 0..L_b-2 in row order (`starts[b]` is
 * row b's first), the same values (to float32 rounding) and gradients as a pass per row.
 */
export function vlBatchOutputs(
  model: Qwen25VL,
  rows: readonly { ids: Int32Array; images?: VisionInput | undefined }[],
  opts: VLTokenOutputOptions,
): { logprobs?: Tensor; entropy?: Tensor; values?: Tensor; starts: number[] } {
  const c = model.config;
  const B = rows.length;
  const T = Math.max(...rows.map((r) => r.ids.length));
  const D = c.text.headDim;
  const ids = new Int32Array(B * T);
  const cos = new Float32Array(B * T * D);
  const sin = new Float32Array(B * T * D);
  // the tower once over every row's images (each image attends within itself, so rows do not mix)
  const seen = towerOutputs(model, rows);
  const embeds: Tensor[] = [];
  const take: number[] = [];
  const targets: number[] = [];
  const starts: number[] = [];
  rows.forEach((r, b) => {
    const L = r.ids.length;
    if (L < 2) throw new ConfigError(`vlBatchOutputs: row ${b} has ${L} tokens; every row needs at least 2`);
    ids.set(r.ids, b * T);
    const padded = ids.subarray(b * T, (b + 1) * T);
    // the padding sits at position 0: causal attention keeps it from the row's own tokens
    const { positions } = model.positions(r.ids, r.images);
    const at = new Int32Array(3 * T);
    for (let axis = 0; axis < 3; axis++) at.set(positions.subarray(axis * L, (axis + 1) * L), axis * T);
    const tables = mropeRotary(at, T, D, c.text.ropeTheta, c.mropeSection);
    cos.set(tables.cos, b * T * D);
    sin.set(tables.sin, b * T * D);
    embeds.push(model.inputEmbeds(padded, r.images, seen[b]));
    starts.push(take.length);
    for (let t = 0; t < L - 1; t++) {
      take.push(b * T + t);
      targets.push(r.ids[t + 1]!);
    }
  });
  const forward = {
    inputEmbeds: concat(embeds, 0),
    rotary: { cos, sin },
    ...(opts.dropoutRng ? { dropoutRng: opts.dropoutRng } : {}),
    ...(opts.checkpoint ? { checkpoint: true } : {}),
  };
  const hidden = embedding(model.lm.hidden(ids, B, T, forward), Int32Array.from(take)); // (N, C)
  const want = { logprobs: opts.logprobs, entropy: opts.entropy };
  const out = tokenStats(hidden, model.lm.lmHead, Int32Array.from(targets), want, undefined, model.lm.suppressedTokens);
  return { ...out, ...(opts.valueHead ? { values: opts.valueHead.forward(hidden) } : {}), starts };
}

/** The tower's image embeddings of each row (undefined for a row without images), from one pass over them all. */
function towerOutputs(model: Qwen25VL, rows: readonly { images?: VisionInput | undefined }[]): (Tensor | undefined)[] {
  const given = rows.flatMap((r) => (r.images && r.images.grids.length > 0 ? [r.images] : []));
  if (given.length === 0) return rows.map(() => undefined);
  const pixels = new Float32Array(given.reduce((n, im) => n + im.pixels.length, 0));
  let offset = 0;
  for (const im of given) {
    pixels.set(im.pixels, offset);
    offset += im.pixels.length;
  }
  const all = model.visual.forward(
    pixels,
    given.flatMap((im) => im.grids),
  ); // (pads of every row, C)
  const merge = model.config.vision.spatialMergeSize ** 2;
  let at = 0;
  return rows.map((r) => {
    if (!r.images || r.images.grids.length === 0) return undefined;
    const n = r.images.grids.reduce((k, [t, h, w]) => k + (t * h * w) / merge, 0);
    at += n;
    return narrow(all, 0, at - n, n);
  });
}

/**
 * The prefill of Qwen2.5-VL prompts with their images for `generate`: each prompt alone (its image embeddings at its
 * `<|image_pad|>` tokens, its 3-D positions) into its row of the batch's cache. The decode steps then run batched on
 * the language model, as for text: what follows a prompt takes the same position on every axis, shifted by the
 * prompt's delta (what transformers' generate does after the first step).
 */
export function vlPrefill(
  model: Qwen25VL,
  prompts: readonly (readonly number[])[],
  images: readonly (VisionInput | undefined)[],
): PromptPrefill {
  const c = model.config;
  const ids = prompts.map((p) => Int32Array.from(p));
  const placed = ids.map((p, i) => model.positions(p, images[i]));
  return {
    positionOffsets: placed.map((p) => p.delta),
    prefill(rows, cache, P) {
      const last: Tensor[] = [];
      try {
        rows.forEach((i, j) => {
          const T = ids[i]!.length;
          const one = new KVCache(c.text, 1, T);
          try {
            const rotary = mropeRotary(placed[i]!.positions, T, c.text.headDim, c.text.ropeTheta, c.mropeSection);
            last.push(
              noGrad(() =>
                tidy(() => {
                  const inputEmbeds = model.inputEmbeds(ids[i]!, images[i]);
                  return narrow(model.lm.hidden(ids[i]!, 1, T, { cache: one, inputEmbeds, rotary }), 0, T - 1, 1);
                }),
              ),
            );
            cache.writeRows(one, j, P - T);
          } finally {
            one.dispose();
          }
        });
        cache.length = P;
        return noGrad(() => tidy(() => model.logits(concat(last, 0)))); // (rows, V)
      } finally {
        for (const t of last) t.dispose();
      }
    },
  };
}

/**
 * Sample completions of prompts with their images (`images[i]` for prompt i; undefined for a text prompt), each token
 * with its log-prob at temperature 1, batched as `generate` samples text (fused weights and the fast decoder where the
 * model takes them; `onTokens` and `cancelled` as there). Same prompts, images, settings and seed -> same tokens. The
 * vision tokens are suppressed (never sampled; the log-probs are of the distribution without them, as
 * `vlTokenOutputs` scores them): a sampled `<|image_pad|>` would be text to the cache but an image to a
 * teacher-forced pass.
 */
export function generateVL(
  model: Qwen25VL,
  prompts: readonly (readonly number[])[],
  images: readonly (VisionInput | undefined)[],
  params: Omit<GenerateOptions, 'images'>,
): Completion[] {
  return generate(model.lm, prompts, params, vlPrefill(model, prompts, images));
}

/** `generateVL` that gives the event loop a turn after each decode step (`generateYielding`). */
export function generateVLYielding(
  model: Qwen25VL,
  prompts: readonly (readonly number[])[],
  images: readonly (VisionInput | undefined)[],
  params: Omit<GenerateOptions, 'images'>,
): Promise<Completion[]> {
  return generateYielding(model.lm, prompts, params, vlPrefill(model, prompts, images));
}
