// Sampling and teacher-forced log-probs for Qwen2.5-VL prompts with images: the prompt (its image embeddings and 3-D
// positions) prefilled into a KV cache, then one token per step at position `index + delta` on every axis (what
// transformers' generate does after the first step), and the per-token outputs of a sequence for training.
import { affine, logprobOfTarget, mul, narrow, noGrad, softmax, tensor, tidy, type Tensor } from '../tensor/index.js';
import { ConfigError, Rng } from '../util/index.js';
import type { ValueHead } from './forward.js';
import type { Completion, GenerateOptions } from './generate.js';
import { KVCache } from './kv-cache.js';
import { mropeRotary } from './qwen2-vl-rotary.js';
import type { Qwen25VL, VisionInput } from './qwen2-vl.js';
import { argmax, Sampler } from './sampling.js';
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
  const T = ids.length;
  if (T < 2) throw new ConfigError(`vlTokenOutputs needs at least 2 tokens, got ${T}`);
  const forward = {
    ...(opts.dropoutRng ? { dropoutRng: opts.dropoutRng } : {}),
    ...(opts.checkpoint ? { checkpoint: true } : {}),
  };
  const hidden = narrow(model.hidden(ids, images, forward), 0, 0, T - 1); // (T-1, C)
  const want = { logprobs: opts.logprobs, entropy: opts.entropy };
  const out = tokenStats(hidden, model.lm.lmHead, ids.slice(1), want, undefined, model.lm.suppressedTokens);
  return opts.valueHead ? { ...out, values: opts.valueHead.forward(hidden) } : out;
}

/**
 * Sample a completion of one prompt with its images (batch 1), each token with its log-prob at temperature 1.
 * Same prompt, images, settings and seed -> same tokens. The vision tokens are suppressed (never sampled; the
 * log-probs are of the distribution without them, as `vlTokenOutputs` scores them): a sampled `<|image_pad|>` would be
 * text to the cache but an image to a teacher-forced pass.
 */
export function generateVL(
  model: Qwen25VL,
  prompt: Int32Array,
  images: VisionInput | undefined,
  params: Omit<GenerateOptions, 'fuseWeights' | 'fastDecode' | 'maxScoreFloats' | 'maxPrefillTokens'>,
  /** This prompt's index among a call's prompts, for `onTokens` and `cancelled`. */
  index = 0,
): Completion {
  const c = model.config;
  const T = prompt.length;
  const capacity = T + params.maxNewTokens;
  if (capacity > c.text.maxPositionEmbeddings)
    throw new ConfigError(
      `The prompt (${T} tokens) and maxNewTokens ${params.maxNewTokens} exceed max_position_embeddings ${c.text.maxPositionEmbeddings}; shorten the prompt or lower maxNewTokens.`,
    );
  const stops = new Set(params.stopTokenIds ?? []);
  const stopStrings = (params.stopStrings ?? []).filter((x) => x.length > 0);
  if (stopStrings.length > 0 && !params.decode)
    throw new ConfigError('stopStrings need a decode function (ids -> text) to match against.');
  const rng = new Rng(params.seed);
  const sampler = new Sampler(c.text.vocabSize);
  const settings = { topP: params.topP ?? 1, topK: params.topK ?? 0 };
  return noGrad(() => {
    const cache = new KVCache(c.text, 1, capacity);
    try {
      const { positions, delta } = model.positions(prompt, images);
      const rotary = mropeRotary(positions, T, c.text.headDim, c.text.ropeTheta, c.mropeSection);
      const embeds = model.inputEmbeds(prompt, images);
      const h = model.lm.hidden(prompt, 1, T, { cache, inputEmbeds: embeds, rotary });
      embeds.dispose();
      let last = narrow(h, 0, T - 1, 1);
      h.dispose();
      const out: Completion = { tokens: [], logprobs: [], finishReason: 'length' };
      for (let step = 0; step < params.maxNewTokens; step++) {
        const off = model.lm.suppressedTokens;
        const logits = tidy(() => (off ? suppressLogits(model.logits(last), off) : model.logits(last))); // (1, V)
        const z = logits.toFloat32Array();
        let token: number;
        if (params.temperature === 0) token = argmax(z, 0, z.length);
        else {
          const probs = softmax(affine(logits, 1 / params.temperature));
          token = sampler.pick(probs.toFloat32Array(), 0, settings, rng, true);
          probs.dispose();
        }
        const lp = logprobOfTarget(logits, Int32Array.of(token));
        out.tokens.push(token);
        out.logprobs.push(lp.item());
        lp.dispose();
        logits.dispose();
        last.dispose();
        const stopped = stops.has(token) || stopStrings.some((x) => params.decode!(out.tokens).includes(x));
        params.onTokens?.([{ index, token, logprob: out.logprobs.at(-1)!, stopped }]);
        if (stopped) {
          out.finishReason = 'stop';
          break;
        }
        if (step === params.maxNewTokens - 1 || params.cancelled?.(index)) break;
        // Text after the prompt: the same position on all three axes, shifted by the images' delta.
        const at = Int32Array.of(cache.length + delta);
        last = model.lm.hidden(Int32Array.of(token), 1, 1, { cache, positions: at });
      }
      return out;
    } finally {
      cache.dispose();
    }
  });
}
