// Stage update: the critic, then the actor, each through one loop (`runUpdate`): PPO epochs x mini-batches (one
// optimizer step each) x micro-batches (gradient accumulation). Losses come from src/algo with the mini-batch's
// AggNorm, so the update does not depend on the micro-batch size (up to float rounding).
import type { TokenBatch } from '../agent/index.js';
import {
  actorLoss,
  aggNorm,
  clippedValueLoss,
  type ActorLossConfig,
  type AggNorm,
  type LossAggMode,
} from '../algo/index.js';
import type {
  BackwardOptions,
  ForwardResult,
  OptimizerSettings,
  OutputGradients,
  TrainableEngine,
} from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import { Rng } from '../util/index.js';
import { maskedStats, selectRows, takeRows } from './batch.js';
import { microBatches } from './micro-batches.js';
import { family, seconds, type StepSettings, type UpdateBatch } from './step-batch.js';

export type { UpdateBatch } from './step-batch.js';

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

/** One micro-batch's loss: its gradient, stats averaged per optimizer step, and stats averaged per loss token. */
export interface MicroLoss {
  grad: OutputGradients;
  /** Summed over the micro-batches, then averaged over optimizer steps (losses: each is already mini-batch-normed). */
  perStep: Record<string, number>;
  /** Token-means of the micro-batch, averaged over all the update's loss tokens. */
  perToken: Record<string, number>;
  tokens: number;
}

/** A role's loss on a micro-batch: `rows` of the batch, `batch` their tokens, `norm` the mini-batch's AggNorm. */
export type LossGrad = (out: ForwardResult, rows: number[], batch: TokenBatch, norm: AggNorm) => MicroLoss;

/** What `runUpdate` reports: the means of `perStep` and `perToken` stats, grad norm, optimizer steps, skips. */
export interface UpdateStats {
  perStep: Record<string, number>;
  perToken: Record<string, number>;
  /** Loss tokens seen over all passes (0: the per-token means are 0). */
  tokens: number;
  gradNorm: number;
  optimizerSteps: number;
  skipped: number;
}

/**
 * The update of one role: for each mini-batch, accumulate the micro-batch gradients `lossGrad` gives, then one
 * optimizer step. Micro-batches follow `microBatches`: by the engine's token budget when it has one.
 */
export async function runUpdate(
  engine: TrainableEngine,
  role: Omit<BackwardOptions, 'diagnostic'>,
  tokens: TokenBatch,
  lossGrad: LossGrad,
  schedule: BatchSchedule,
  optimizer: OptimizerSettings,
): Promise<UpdateStats> {
  const T = tokens.T;
  const perStep: Record<string, number> = {};
  const perToken: Record<string, number> = {};
  const sum = { tokens: 0, gradNorm: 0, steps: 0, skipped: 0 };
  for (const mini of miniBatches(tokens.B, schedule)) {
    const norm = aggNorm(takeRows(tokens.lossMask, mini, T), mini.length, T, schedule.horizon);
    if (norm.tokens === 0) continue;
    for (const micro of microBatches(mini, tokens.lengths, schedule.microBatchSize, engine.tokenBudget)) {
      const batch = selectRows(tokens, micro);
      await engine.backward(batch, role, (out) => {
        const r = lossGrad(out, micro, batch, norm);
        for (const [k, v] of Object.entries(r.perStep)) perStep[k] = (perStep[k] ?? 0) + v;
        for (const [k, v] of Object.entries(r.perToken)) perToken[k] = (perToken[k] ?? 0) + v * r.tokens;
        sum.tokens += r.tokens;
        return r.grad;
      });
    }
    const step = await engine.optimizerStep(role.role, optimizer);
    sum.gradNorm += step.gradNorm;
    sum.steps++;
    if (step.skipped) sum.skipped++;
  }
  const mean = (xs: Record<string, number>, n: number) =>
    Object.fromEntries(Object.entries(xs).map(([k, v]) => [k, n > 0 ? v / n : 0]));
  return {
    perStep: mean(perStep, sum.steps),
    perToken: mean(perToken, sum.tokens),
    tokens: sum.tokens,
    gradNorm: sum.steps > 0 ? sum.gradNorm / sum.steps : 0,
    optimizerSteps: sum.steps,
    skipped: sum.skipped,
  };
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

/** The actor's loss (src/algo `actorLoss`) on a micro-batch; entropy is always computed for `actor/entropy`. */
export function actorLossGrad(data: UpdateBatch, loss: ActorLossConfig): LossGrad {
  const needEntropy = loss.entropyCoeff !== 0;
  return (out, rows, batch, norm) => {
    const T = batch.T;
    const r = actorLoss(
      {
        logprobs: out.logprobs,
        oldLogprobs: takeRows(data.oldLogprobs, rows, T),
        advantages: takeRows(data.advantages, rows, T),
        mask: batch.lossMask,
        B: batch.B,
        T,
        ...(out.entropy ? { entropy: out.entropy } : {}),
        ...(data.refLogprobs ? { refLogprobs: takeRows(data.refLogprobs, rows, T) } : {}),
        norm,
      },
      loss,
    );
    const s = r.stats;
    return {
      grad: { logprobs: r.grad.logprobs, ...(r.grad.entropy && needEntropy ? { entropy: r.grad.entropy } : {}) },
      perStep: { pgLoss: s.pgLoss, entropyLoss: s.entropyLoss, klLoss: s.klLoss },
      perToken: { clipfrac: s.clipfrac, clipfracDual: s.clipfracDual, ppoKl: s.ppoKl, entropy: s.entropy },
      tokens: s.tokens,
    };
  };
}

/** The policy update (see runUpdate) with the actor loss. */
export async function updateActor(
  engine: TrainableEngine,
  data: UpdateBatch,
  loss: ActorLossConfig,
  schedule: BatchSchedule,
  optimizer: OptimizerSettings,
): Promise<ActorUpdateStats> {
  const u = await runUpdate(
    engine,
    { role: 'policy', entropy: true },
    data.tokens,
    actorLossGrad(data, loss),
    schedule,
    optimizer,
  );
  const { pgLoss = 0, entropyLoss = 0, klLoss = 0 } = u.perStep;
  const { clipfrac = 0, clipfracDual = 0, ppoKl = 0, entropy = 0 } = u.perToken;
  return {
    pgLoss,
    entropyLoss,
    klLoss,
    gradNorm: u.gradNorm,
    clipfrac,
    clipfracDual,
    ppoKl,
    optimizerSteps: u.optimizerSteps,
    skipped: u.skipped,
    entropy: u.tokens > 0 ? entropy : null,
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

/** The critic's clipped value loss toward `returns`, around the pre-update `values`, on a micro-batch. */
export function criticLossGrad(data: UpdateBatch, loss: { lossAgg: LossAggMode; valueClip: number }): LossGrad {
  if (!data.values) throw new TypeError('updateCritic needs the pre-update `values`.');
  const oldValues = data.values;
  return (out, rows, batch, norm) => {
    const T = batch.T;
    const r = clippedValueLoss({
      values: out.values!,
      oldValues: takeRows(oldValues, rows, T),
      returns: takeRows(data.returns, rows, T),
      mask: batch.lossMask,
      B: batch.B,
      T,
      valueClip: loss.valueClip,
      lossAgg: loss.lossAgg,
      norm,
    });
    return {
      grad: { values: r.grad.values },
      perStep: { vfLoss: r.loss },
      perToken: { vfClipfrac: r.stats.vfClipfrac },
      tokens: r.stats.tokens,
    };
  };
}

/** The critic update (see runUpdate) with the clipped value loss. */
export async function updateCritic(
  engine: TrainableEngine,
  data: UpdateBatch,
  loss: { lossAgg: LossAggMode; valueClip: number },
  schedule: BatchSchedule,
  optimizer: OptimizerSettings,
): Promise<CriticUpdateStats> {
  const u = await runUpdate(engine, { role: 'critic' }, data.tokens, criticLossGrad(data, loss), schedule, optimizer);
  return {
    vfLoss: u.perStep.vfLoss ?? 0,
    vfClipfrac: u.perToken.vfClipfrac ?? 0,
    gradNorm: u.gradNorm,
    optimizerSteps: u.optimizerSteps,
    skipped: u.skipped,
  };
}

/**
 * The stage: the critic's update (when the batch has values), then the actor's after `criticWarmup` steps, with their
 * `critic/*` and `actor/*` metrics. `entropyKnown`: `actor/entropy` was already measured (the score stage's forward).
 */
export async function updateStage(
  b: UpdateBatch,
  s: StepSettings['update'],
  engine: TrainableEngine,
  o: { step: number; shuffleSeed: number | null; entropyKnown: boolean },
): Promise<{ metrics: MetricValues; optimizerSteps: number }> {
  const schedule: BatchSchedule = {
    miniBatchSize: s.miniBatchSize,
    microBatchSize: s.microBatchSize,
    epochs: s.epochs,
    shuffleSeed: o.shuffleSeed,
    horizon: s.horizon,
  };
  let metrics: MetricValues = {};
  let optimizerSteps = 0;
  if (b.values !== undefined) {
    const t0 = performance.now();
    const settings = s.optimizer('critic', o.step);
    const c = await updateCritic(engine, b, s.criticLoss, schedule, settings);
    // A shared-trunk critic's backward also reaches the policy trunk: drop that gradient so the actor's update
    // is its own loss's alone (the trunk learns from the policy loss; the value head from the value loss).
    if (s.sharedCritic) engine.zeroGrad('policy');
    metrics = family('critic', {
      vf_loss: c.vfLoss,
      vf_clipfrac: c.vfClipfrac,
      grad_norm: c.gradNorm,
      lr: settings.lr,
      values_mean: maskedStats(b.values, b.tokens.lossMask).mean,
    });
    Object.assign(metrics, family('timing_s', { update_critic: seconds(t0) }));
  }
  if (o.step > s.criticWarmup) {
    const t0 = performance.now();
    const settings = s.optimizer('actor', o.step);
    const u = await updateActor(engine, b, s.actorLoss, schedule, settings);
    optimizerSteps = u.optimizerSteps;
    Object.assign(
      metrics,
      family('actor', {
        pg_loss: u.pgLoss,
        pg_clipfrac: u.clipfrac,
        pg_clipfrac_lower: u.clipfracDual,
        ppo_kl: u.ppoKl,
        entropy_loss: u.entropyLoss,
        grad_norm: u.gradNorm,
        lr: settings.lr,
        skipped_updates: u.skipped,
      }),
      family('timing_s', { update_actor: seconds(t0) }),
      family('actor', {
        entropy: !o.entropyKnown && u.entropy !== null ? u.entropy : undefined,
        kl_loss: s.useKlLoss ? u.klLoss : undefined,
      }),
    );
  }
  return { metrics, optimizerSteps };
}
