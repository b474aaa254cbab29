// RAGEN-2's reasoning-collapse diagnostics on a step's unfiltered rollouts: every sampled reasoning is scored
// (teacher-forced) under every distinct prompt of the sample, and src/algo's collapseMetrics reads the matrix.
import type { Episode, EpisodeTurn } from '../agent/index.js';
import { collapseMetrics, promptKeys, type CollapseMetrics } from '../algo/index.js';
import { sequenceBatch, type Engine } from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import type { RgbImage } from '../util/index.js';
import { family } from './step-batch.js';

/** Settings (the config's `trainer.collapse`). */
export interface CollapseSettings {
  numSamples: number;
  firstTurn: boolean;
  multiTurn: boolean;
}

/** EMA state carried between diagnostics (saved in checkpoints). */
export interface CollapseEma {
  firstTurn?: { marginalStd: number; marginalStdSeq?: number };
  trajectory?: { marginalStd: number; marginalStdSeq?: number };
}

/** Pairs scored by the all-turn sample: R x N forward sequences grow quadratically, so it stays small. */
export const TRAJECTORY_SAMPLE_CAP = 16;

interface Pair {
  prompt: number[];
  /** The images the prompt's vision tokens stand for (a vision-language policy's). */
  images?: readonly RgbImage[];
  response: number[];
}

/** A turn's prompt (with its images) and response. */
const pairOf = (t: EpisodeTurn): Pair => ({
  prompt: t.promptIds,
  ...(t.promptImages ? { images: t.promptImages } : {}),
  response: t.tokens,
});

/** `n` items spread evenly over `xs` (all when there are at most n), deterministic. */
function spread<T>(xs: readonly T[], n: number): T[] {
  if (xs.length <= n) return xs.slice();
  return Array.from({ length: n }, (_, i) => xs[Math.floor((i * xs.length) / n)]!);
}

/** Score each response under each distinct prompt; null when fewer than 2 distinct prompts. */
async function score(
  engine: Engine,
  pairs: readonly Pair[],
  ema: CollapseEma['firstTurn'],
): Promise<CollapseMetrics | null> {
  const keys = promptKeys(pairs.map((p) => p.prompt));
  const columns: number[] = [];
  const columnOf = new Map<string, number>();
  keys.forEach((k, i) => {
    if (!columnOf.has(k)) {
      columnOf.set(k, columns.length);
      columns.push(i);
    }
  });
  const N = columns.length;
  const R = pairs.length;
  if (N < 2 || R < 1) return null;
  const seqs: number[][] = [];
  for (const p of pairs) for (const c of columns) seqs.push([...pairs[c]!.prompt, ...p.response]);
  const images = pairs.flatMap(() => columns.map((c) => pairs[c]!.images));
  const batch = { ...sequenceBatch(seqs), ...(images.some((im) => im) ? { images } : {}) };
  const out = await engine.forward(batch, { role: 'policy' });
  const meanLogProbs = new Float64Array(R * N);
  const sumLogProbs = new Float64Array(R * N);
  for (let r = 0; r < R; r++) {
    const z = pairs[r]!.response.length;
    for (let j = 0; j < N; j++) {
      const row = (r * N + j) * batch.T;
      const start = pairs[columns[j]!]!.prompt.length; // response token i sits at position start + i
      let s = 0;
      for (let i = 0; i < z; i++) s += out.logprobs[row + start + i]!;
      sumLogProbs[r * N + j] = s;
      meanLogProbs[r * N + j] = z > 0 ? s / z : 0;
    }
  }
  return collapseMetrics(
    {
      meanLogProbs,
      sumLogProbs,
      R,
      N,
      ownColumn: keys.map((k) => columnOf.get(k)!),
      columnKeys: columns.map((c) => keys[c]!),
    },
    ema ? { ema } : {},
  );
}

/** The eight statistics of a sample: its family's first keys, and the headline `collapse/*` keys. */
function headline(m: CollapseMetrics) {
  return {
    mi_estimate: m.miEstimate,
    mi_upper_bound: m.miUpperBound,
    mi_zscore: m.miZscore,
    mi_zscore_ema: m.miZscoreEma,
    conditional_entropy: m.conditionalEntropy,
    reasoning_entropy: m.reasoningEntropy,
    retrieval_accuracy: m.retrieval.accuracy,
    retrieval_chance: m.retrieval.chance,
  };
}

/** Every statistic of a sample under its family's prefix. */
function sampleFamily(
  prefix: 'collapse_first_turn_sample' | 'collapse_trajectory_sample',
  m: CollapseMetrics,
): MetricValues {
  const extra: Record<string, number> = {};
  for (const k of m.retrievalTopK) extra[`retrieval_top${k.k}_accuracy`] = k.accuracy;
  if (m.seq) extra.mi_estimate_seq = m.seq.miEstimate;
  return family(prefix, { ...headline(m), ...extra });
}

/**
 * The diagnostics of one step. First-turn sample: up to `numSamples` first-turn (prompt, response) pairs
 * (prompts of one group are identical, so N = the distinct prompts); its statistics are also the headline
 * `collapse/*` keys. Trajectory sample: up to TRAJECTORY_SAMPLE_CAP pairs drawn from all turns.
 */
export async function collapseDiagnostics(
  engine: Engine,
  episodes: readonly Episode[],
  settings: CollapseSettings,
  ema: CollapseEma,
): Promise<{ metrics: MetricValues; ema: CollapseEma }> {
  const turns = episodes.flatMap((e) => e.turns);
  const metrics = family('collapse', {
    valid_thinking_rate: turns.length
      ? turns.filter((t) => (t.loop?.think ?? '').trim() !== '').length / turns.length
      : 0,
  });
  const next: CollapseEma = { ...ema };
  if (settings.firstTurn) {
    const pairs = spread(
      episodes.filter((e) => e.turns.length > 0).map((e) => pairOf(e.turns[0]!)),
      settings.numSamples,
    );
    const m = await score(engine, pairs, ema.firstTurn);
    if (m) {
      next.firstTurn = m.ema;
      Object.assign(metrics, sampleFamily('collapse_first_turn_sample', m), family('collapse', headline(m)));
    }
  }
  if (settings.multiTurn) {
    const all = episodes.flatMap((e) => e.turns.map(pairOf));
    const m = await score(engine, spread(all, Math.min(settings.numSamples, TRAJECTORY_SAMPLE_CAP)), ema.trajectory);
    if (m) {
      next.trajectory = m.ema;
      Object.assign(metrics, sampleFamily('collapse_trajectory_sample', m));
    }
  }
  return { metrics, ema: next };
}
