// Actor and critic updates over a step's batch: PPO epochs x mini-batches (one optimizer step each) x
// micro-batches (gradient accumulation). Losses come from src/algo with the mini-batch's AggNorm, so the
// update does not depend on the micro-batch size (up to float rounding).
import type { TokenBatch } from '../agent/index.js';
import {
  actorLoss,
  aggNorm,
  clippedValueLoss,
  type ActorLossConfig,
  type AggNorm,
  type LossAggMode,
} from '../algo/index.js';
import type { OptimizerSettings, TrainableEngine } from '../engine/index.js';
import { Rng } from '../util/index.js';
import { selectRows, takeRows } from './batch.js';
import { microBatches } from './micro-batches.js';

/** A per-token (B, T) array, token-aligned with the batch (the engine's outputs and src/algo's results alike). */
type TokenArray = Float32Array | Float64Array;

/** Per-token (B, T) arrays of the step, token-aligned with `tokens` (see batch.ts). */
export interface UpdateBatch {
  tokens: TokenBatch;
  /** log π_old: the log-probs of the sampling policy (the sampler's, or recomputed). */
  oldLogprobs: TokenArray;
  advantages: TokenArray;
  returns: TokenArray;
  /** Critic values before the update (the value clip's centre); needed by `updateCritic`. */
  values?: TokenArray;
  /** Reference log-probs; needed when the actor loss has a KL term. */
  refLogprobs?: TokenArray;
}

/** How a batch is cut into optimizer steps. */
export interface BatchSchedule {
  miniBatchSize: number;
  /** Most rows per engine.backward call; an engine with a token budget also cuts by it (micro-batches.ts). */
  microBatchSize: number;
  epochs: number;
  /** Shuffle rows before cutting mini-batches, with this seed per step (null keeps the rollout order). */
  shuffleSeed: number | null;
  /** Dr. GRPO's constant horizon for `seq-mean-token-sum-norm` (the most loss tokens a sequence can have). */
  horizon: number;
}

/**
 * Row indices of every mini-batch, epoch after epoch: ceil(B / miniBatchSize) mini-batches per epoch, the last
 * one smaller when B is not a multiple (RAGEN's `adjust_batch` instead duplicates or drops rows to make it one).
 */
export function miniBatches(B: number, s: Pick<BatchSchedule, 'miniBatchSize' | 'epochs' | 'shuffleSeed'>): number[][] {
  const out: number[][] = [];
  for (let e = 0; e < s.epochs; e++) {
    const order = Array.from({ length: B }, (_, i) => i);
    if (s.shuffleSeed !== null) new Rng(((s.shuffleSeed >>> 0) + Math.imul(e + 1, 0x9e3779b1)) >>> 0).shuffle(order);
    for (let i = 0; i < B; i += s.miniBatchSize) out.push(order.slice(i, i + s.miniBatchSize));
  }
  return out;
}

/** Means over the update's optimizer steps (token-weighted where the stat is per token). */
export interface ActorUpdateStats {
  pgLoss: number;
  clipfrac: number;
  clipfracDual: number;
  ppoKl: number;
  entropyLoss: number;
  klLoss: number;
  gradNorm: number;
  optimizerSteps: number;
  skipped: number;
  /** Token-mean entropy of the policy over the update's forward passes (the first epoch's first pass is pre-update). */
  entropy: number | null;
}

/**
 * The policy update: for each mini-batch, accumulate micro-batch gradients of the actor loss, then one optimizer step.
 * Micro-batches follow `microBatches`: by the engine's token budget when it has one.
 */
export async function updateActor(
  engine: TrainableEngine,
  data: UpdateBatch,
  loss: ActorLossConfig,
  schedule: BatchSchedule,
  optimizer: OptimizerSettings,
): Promise<ActorUpdateStats> {
  const { tokens } = data;
  const T = tokens.T;
  const needEntropy = loss.entropyCoeff !== 0;
  const sum = {
    pgLoss: 0,
    entropyLoss: 0,
    klLoss: 0,
    gradNorm: 0,
    clip: 0,
    dual: 0,
    kl: 0,
    tokens: 0,
    steps: 0,
    skipped: 0,
    entropy: 0,
  };
  for (const mini of miniBatches(tokens.B, schedule)) {
    const norm: AggNorm = aggNorm(takeRows(tokens.lossMask, mini, T), mini.length, T, schedule.horizon);
    if (norm.tokens === 0) continue;
    for (const micro of microBatches(mini, tokens.lengths, schedule.microBatchSize, engine.tokenBudget)) {
      const batch = selectRows(tokens, micro);
      // Entropy is always computed (cheap next to the LM head) for the `actor/entropy` metric.
      await engine.backward(batch, { role: 'policy', entropy: true }, (out) => {
        const r = actorLoss(
          {
            logprobs: out.logprobs,
            oldLogprobs: takeRows(data.oldLogprobs, micro, T),
            advantages: takeRows(data.advantages, micro, T),
            mask: batch.lossMask,
            B: batch.B,
            T,
            ...(out.entropy ? { entropy: out.entropy } : {}),
            ...(data.refLogprobs ? { refLogprobs: takeRows(data.refLogprobs, micro, T) } : {}),
            norm,
          },
          loss,
        );
        sum.pgLoss += r.stats.pgLoss;
        sum.entropyLoss += r.stats.entropyLoss;
        sum.klLoss += r.stats.klLoss;
        sum.clip += r.stats.clipfrac * r.stats.tokens;
        sum.dual += r.stats.clipfracDual * r.stats.tokens;
        sum.kl += r.stats.ppoKl * r.stats.tokens;
        sum.tokens += r.stats.tokens;
        sum.entropy += r.stats.entropy * r.stats.tokens;
        return { logprobs: r.grad.logprobs, ...(r.grad.entropy && needEntropy ? { entropy: r.grad.entropy } : {}) };
      });
    }
    const step = await engine.optimizerStep('policy', optimizer);
    sum.gradNorm += step.gradNorm;
    sum.steps++;
    if (step.skipped) sum.skipped++;
  }
  const perStep = (x: number) => (sum.steps > 0 ? x / sum.steps : 0);
  const perToken = (x: number) => (sum.tokens > 0 ? x / sum.tokens : 0);
  return {
    pgLoss: perStep(sum.pgLoss),
    entropyLoss: perStep(sum.entropyLoss),
    klLoss: perStep(sum.klLoss),
    gradNorm: perStep(sum.gradNorm),
    clipfrac: perToken(sum.clip),
    clipfracDual: perToken(sum.dual),
    ppoKl: perToken(sum.kl),
    optimizerSteps: sum.steps,
    skipped: sum.skipped,
    entropy: sum.tokens > 0 ? sum.entropy / sum.tokens : null,
  };
}

/** Means over the critic's optimizer steps. */
export interface CriticUpdateStats {
  vfLoss: number;
  vfClipfrac: number;
  gradNorm: number;
  optimizerSteps: number;
  skipped: number;
}

/**
 * The critic update: clipped value loss toward `returns`, around the pre-update `values`, same batching as the actor.
 */
export async function updateCritic(
  engine: TrainableEngine,
  data: UpdateBatch,
  loss: { lossAgg: LossAggMode; valueClip: number },
  schedule: BatchSchedule,
  optimizer: OptimizerSettings,
): Promise<CriticUpdateStats> {
  const { tokens } = data;
  const T = tokens.T;
  if (!data.values) throw new TypeError('updateCritic needs the pre-update `values`.');
  const oldValues = data.values;
  const sum = { loss: 0, clip: 0, tokens: 0, gradNorm: 0, steps: 0, skipped: 0 };
  for (const mini of miniBatches(tokens.B, schedule)) {
    const norm = aggNorm(takeRows(tokens.lossMask, mini, T), mini.length, T, schedule.horizon);
    if (norm.tokens === 0) continue;
    for (const micro of microBatches(mini, tokens.lengths, schedule.microBatchSize, engine.tokenBudget)) {
      const batch = selectRows(tokens, micro);
      await engine.backward(batch, { role: 'critic' }, (out) => {
        const r = clippedValueLoss({
          values: out.values!,
          oldValues: takeRows(oldValues, micro, T),
          returns: takeRows(data.returns, micro, T),
          mask: batch.lossMask,
          B: batch.B,
          T,
          valueClip: loss.valueClip,
          lossAgg: loss.lossAgg,
          norm,
        });
        sum.loss += r.loss;
        sum.clip += r.stats.vfClipfrac * r.stats.tokens;
        sum.tokens += r.stats.tokens;
        return { values: r.grad.values };
      });
    }
    const step = await engine.optimizerStep('critic', optimizer);
    sum.gradNorm += step.gradNorm;
    sum.steps++;
    if (step.skipped) sum.skipped++;
  }
  return {
    vfLoss: sum.steps > 0 ? sum.loss / sum.steps : 0,
    vfClipfrac: sum.tokens > 0 ? sum.clip / sum.tokens : 0,
    gradNorm: sum.steps > 0 ? sum.gradNorm / sum.steps : 0,
    optimizerSteps: sum.steps,
    skipped: sum.skipped,
  };
}
