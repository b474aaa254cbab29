// RAGEN-2's gradient analysis (inventory 3.5): for groups bucketed by in-group reward std, the gradient norm of
// each actor-loss term (task, entropy, KL) on its own. Separate backward passes that leave no gradient behind,
// so training is untouched; RAGEN-2 reads from it how much of the update each signal level drives.
import {
  actorLoss,
  aggNorm,
  bucketName,
  entropyBonus,
  klLoss,
  rewardStdBuckets,
  type ActorLossConfig,
  type RolloutFilterResult,
} from '../algo/index.js';
import type { TokenBatch } from '../agent/index.js';
import type { ForwardResult, OutputGradients, TrainableEngine } from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import { selectRows, takeRows } from './batch.js';
import { microBatches } from './micro-batches.js';
import { advantagesStage } from './stage-advantages.js';
import { scoreStage } from './stage-score.js';
import type { StepSettings, UpdateBatch } from './step-batch.js';

/** The three terms of the actor loss, each measured with its own backward pass. */
export const GRAD_COMPONENTS = ['task', 'entropy', 'kl'] as const;
export type GradComponent = (typeof GRAD_COMPONENTS)[number];

/** One bucket's measurements. */
export interface GradBucket {
  /** `bucket_1` (lowest reward std) ... `bucket_k`, or `all` (every row of the batch). */
  name: string;
  groups: number;
  samples: number;
  /** Loss tokens (the per-token normaliser). */
  tokens: number;
  /** samples / the batch's samples. */
  samplePct: number;
  /** In-group reward std of the bucket's groups. */
  rewardStd: { mean: number; min: number; max: number };
  /** Global L2 norm of the policy gradient of each term, as the term enters the loss (coefficient included). */
  norm: Record<GradComponent, number>;
  /** Each term's value, aggregated over the bucket as the update aggregates a mini-batch. */
  loss: Record<GradComponent, number>;
}

/** Settings (the config's `trainer.gradAnalysis` plus the update's batching). */
export interface GradAnalysisSettings {
  buckets: number;
  /** Most rows per backward pass (gradients accumulate over a bucket); cut like the update's (micro-batches.ts). */
  microBatchSize: number;
  /** Dr. GRPO's constant horizon (`lossHorizon`). */
  horizon: number;
}

/** The gradient of one term w.r.t. the pass's outputs, and the term's value. */
function termGradient(
  c: GradComponent,
  out: ForwardResult,
  rows: readonly number[],
  data: UpdateBatch,
  mask: Uint8Array,
  norm: ReturnType<typeof aggNorm>,
  loss: ActorLossConfig,
): { loss: number; grad: OutputGradients } {
  const T = data.tokens.T;
  const B = rows.length;
  switch (c) {
    case 'task': {
      // The clipped policy loss alone: actorLoss with the other two terms switched off.
      const r = actorLoss(
        {
          logprobs: out.logprobs,
          oldLogprobs: takeRows(data.oldLogprobs, rows, T),
          advantages: takeRows(data.advantages, rows, T),
          mask,
          B,
          T,
          norm,
        },
        { ...loss, entropyCoeff: 0, klCoef: 0 },
      );
      return { loss: r.stats.pgLoss, grad: { logprobs: r.grad.logprobs } };
    }
    case 'entropy': {
      const r = entropyBonus({
        entropy: out.entropy!,
        mask,
        B,
        T,
        coef: loss.entropyCoeff,
        lossAgg: loss.lossAgg,
        norm,
      });
      return { loss: r.loss, grad: { entropy: r.grad.entropy } };
    }
    case 'kl': {
      const r = klLoss({
        logprobs: out.logprobs,
        refLogprobs: takeRows(data.refLogprobs!, rows, T),
        mask,
        B,
        T,
        estimator: loss.klEstimator,
        coef: loss.klCoef,
        lossAgg: loss.lossAgg,
        norm,
      });
      return { loss: r.loss, grad: { logprobs: r.grad.logprobs } };
    }
  }
}

/** Norm and value of term `c` over rows `rows`; the policy's gradients are zero before and after. */
async function measure(
  engine: TrainableEngine,
  c: GradComponent,
  data: UpdateBatch,
  rows: readonly number[],
  loss: ActorLossConfig,
  s: GradAnalysisSettings,
): Promise<{ norm: number; loss: number }> {
  // A term that is not in the loss (coefficient 0) has no gradient: skip its passes.
  if ((c === 'entropy' && loss.entropyCoeff === 0) || (c === 'kl' && loss.klCoef === 0)) return { norm: 0, loss: 0 };
  if (c === 'kl' && !data.refLogprobs)
    throw new TypeError('gradient analysis: the KL term is in the loss but the batch has no reference log-probs.');
  const T = data.tokens.T;
  const norm = aggNorm(takeRows(data.tokens.lossMask, rows as number[], T), rows.length, T, s.horizon);
  let value = 0;
  for (const micro of microBatches(rows, data.tokens.lengths, s.microBatchSize, engine.tokenBudget)) {
    const batch = selectRows(data.tokens, micro);
    await engine.backward(batch, { role: 'policy', entropy: c === 'entropy', diagnostic: true }, (out) => {
      const r = termGradient(c, out, micro, data, batch.lossMask, norm, loss);
      value += r.loss;
      return r.grad;
    });
  }
  const n = await engine.gradNorm('policy');
  engine.zeroGrad('policy');
  return { norm: n, loss: value };
}

/**
 * Bucket the batch's groups by in-group reward std (`rewardStdBuckets`: `settings.buckets` equal-count buckets by
 * rank) and measure each loss term's gradient per bucket, plus `all` (the whole batch). `groupStd` maps each group
 * key of `data.tokens.groupIds` to its reward std. Each bucket's loss is normalised over the bucket alone, as if it
 * were one mini-batch. Throws when the policy holds gradients already (they would be lost): call it between updates.
 */
export async function gradientAnalysis(
  engine: TrainableEngine,
  data: UpdateBatch,
  groupStd: ReadonlyMap<string, number>,
  loss: ActorLossConfig,
  settings: GradAnalysisSettings,
): Promise<GradBucket[]> {
  const held = await engine.gradNorm('policy');
  if (held !== 0)
    throw new Error(
      `gradient analysis: the policy already holds gradients (norm ${held}); run it between updates, when none are accumulated.`,
    );
  const ids = data.tokens.groupIds;
  const keys = [...new Set(ids)];
  const stds = keys.map((k) => {
    const s = groupStd.get(k);
    if (s === undefined) throw new TypeError(`gradient analysis: no reward std for group '${k}'.`);
    return s;
  });
  const rowsOf = new Map<string, number[]>(keys.map((k) => [k, []]));
  ids.forEach((k, r) => rowsOf.get(k)!.push(r));
  const named: [string, number[]][] = rewardStdBuckets(stds, settings.buckets).map((g, i) => [bucketName(i), g]);
  named.push(['all', keys.map((_, g) => g)]);
  const out: GradBucket[] = [];
  for (const [name, groups] of named) {
    if (groups.length === 0) continue;
    // One rank bucket holding every group (few groups kept) is `all` already: reuse its passes.
    const same = name === 'all' ? out.find((b) => b.groups === keys.length) : undefined;
    if (same) {
      out.push({ ...same, name, norm: { ...same.norm }, loss: { ...same.loss } });
      continue;
    }
    const rows = groups.flatMap((g) => rowsOf.get(keys[g]!)!).sort((a, b) => a - b);
    const T = data.tokens.T;
    let tokens = 0;
    for (const r of rows) for (let t = 0; t < T; t++) tokens += data.tokens.lossMask[r * T + t] ? 1 : 0;
    const s = groups.map((g) => stds[g]!);
    const bucket: GradBucket = {
      name,
      groups: groups.length,
      samples: rows.length,
      tokens,
      samplePct: rows.length / data.tokens.B,
      rewardStd: { mean: s.reduce((a, x) => a + x, 0) / s.length, min: Math.min(...s), max: Math.max(...s) },
      norm: { task: 0, entropy: 0, kl: 0 },
      loss: { task: 0, entropy: 0, kl: 0 },
    };
    for (const c of GRAD_COMPONENTS) {
      const m = await measure(engine, c, data, rows, loss, settings);
      bucket.norm[c] = m.norm;
      bucket.loss[c] = m.loss;
    }
    out.push(bucket);
  }
  return out;
}

/** The buckets as metrics `<prefix>/<bucket>/<name>` (names: GRAD_ANALYSIS_NAMES in src/metrics/names.ts). */
export function gradAnalysisMetrics(
  buckets: readonly GradBucket[],
  prefix: 'grad_analysis' | 'grad_analysis/prefilter',
): MetricValues {
  const m: MetricValues = {};
  for (const b of buckets) {
    const k = (name: string) => `${prefix}/${b.name}/${name}` as const;
    for (const c of GRAD_COMPONENTS) {
      m[k(c)] = b.norm[c];
      m[k(`per_sample/${c}`)] = b.samples > 0 ? b.norm[c] / b.samples : 0;
      m[k(`per_token/${c}`)] = b.tokens > 0 ? b.norm[c] / b.tokens : 0;
      m[k(`loss/${c}`)] = b.loss[c];
    }
    Object.assign(m, {
      [k('sample_count')]: b.samples,
      [k('sample_pct')]: b.samplePct,
      [k('token_count')]: b.tokens,
      [k('group_count')]: b.groups,
      [k('reward_std_mean')]: b.rewardStd.mean,
      [k('reward_std_min')]: b.rewardStd.min,
      [k('reward_std_max')]: b.rewardStd.max,
    });
  }
  return m;
}

/** The buckets of a step's analysis: of the filtered batch, and of the whole batch when `prefilter` is on. */
export interface StepGradAnalysis {
  filtered: GradBucket[];
  prefilter: GradBucket[] | null;
  metrics: MetricValues;
}

/**
 * The analysis of one training step with the step's settings (`trainer.gradAnalysis`, the update's loss and
 * batching): on `data` (the kept rows, prepared for the update) and, with `prefilter`, on every row of `all`,
 * prepared the same way. Call it between updates; the policy's gradients are zero before and after.
 */
export async function analyzeStep(
  engine: TrainableEngine,
  settings: Pick<StepSettings, 'gradAnalysis' | 'update' | 'score' | 'advantages'>,
  s: {
    all: TokenBatch;
    filter: RolloutFilterResult;
    data: UpdateBatch | null;
    fullForward?: { logprobs: Float32Array; entropy?: Float32Array };
    klBeta: number;
  },
): Promise<StepGradAnalysis> {
  const ga = settings.gradAnalysis;
  const groupStd = new Map(s.filter.groupKeys.map((k, g) => [String(k), s.filter.groupRewardStd[g]!]));
  const bucketing: GradAnalysisSettings = {
    buckets: ga.buckets,
    microBatchSize: settings.update.microBatchSize,
    horizon: settings.update.horizon,
  };
  const loss = settings.update.actorLoss;
  const filtered = s.data ? await gradientAnalysis(engine, s.data, groupStd, loss, bucketing) : [];
  let prefilter: GradBucket[] | null = null;
  if (ga.prefilter) {
    // every row through the step's own score and advantages stages (the unfiltered view)
    const everyRow = {
      all: s.all,
      keptRows: s.all.groupIds.map((_, i) => i),
      ...(s.fullForward ? { fullForward: s.fullForward } : {}),
    };
    const { metrics: _s, ...scored } = await scoreStage(everyRow, settings.score, engine);
    const { metrics: _a, ...adv } = advantagesStage(scored, settings.advantages, { klBeta: s.klBeta, keptRatio: 1 });
    prefilter = await gradientAnalysis(engine, { ...scored, ...adv }, groupStd, loss, bucketing);
  }
  return {
    filtered,
    prefilter,
    metrics: {
      ...gradAnalysisMetrics(filtered, 'grad_analysis'),
      ...(prefilter ? gradAnalysisMetrics(prefilter, 'grad_analysis/prefilter') : {}),
    },
  };
}
