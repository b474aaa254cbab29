// Template-collapse diagnostics of RAGEN-2 (`collapse_metrics.py`): from teacher-forced log-probs of each
// sampled reasoning z under every prompt x, estimate I(X;Z), H(Z|X), H(Z), and prompt retrieval accuracy.
import { ShapeError } from '../util/index.js';
import { checkLength, type Nums } from './shape.js';

/** Input: an (R, N) cross-scoring matrix, R sampled reasonings by N prompts, flat row-major. */
export interface CollapseInput {
  /** (R, N): mean per-token log-prob of reasoning r under prompt j (length-normalised ℓ̄_j(z)). */
  meanLogProbs: Nums;
  /** (R, N): summed log-prob ℓ_j(z); optional, gives the `seq` metrics. */
  sumLogProbs?: Nums;
  R: number;
  N: number;
  /** Per row: the column of the prompt that produced it. */
  ownColumn: ArrayLike<number>;
  /** Per column: a key, equal for identical prompts (which count as the same for retrieval). Default: all distinct. */
  columnKeys?: ArrayLike<number | string>;
}

/** Options and the EMA state carried between calls (one state per sampling scheme). */
export interface CollapseOptions {
  /** Added to the marginal std in z-scores. @default 1e-3 */
  stdEps?: number;
  /** EMA decay of the marginal std. @default 0.9 */
  emaDecay?: number;
  /** The previous call's `ema` output; absent on the first call (the EMA starts at the current std). */
  ema?: { marginalStd: number; marginalStdSeq?: number };
}

/** MI-type statistics of one matrix (per-token mean or summed log-probs). */
export interface MIStats {
  /** Î(X;Z) = mean(matched) − mean(marginal); can be slightly negative (Monte-Carlo). */
  miEstimate: number;
  /** Ĥ(Z|X) = −mean(matched). */
  conditionalEntropy: number;
  /** Ĥ(Z) = −mean(marginal), marginal = log of the uniform prompt mixture. */
  reasoningEntropy: number;
  matchedLogProbMean: number;
  marginalLogProbMean: number;
  /** Population std of the marginal over rows. */
  marginalStd: number;
  /** mean((matched − marginal) / (marginalStd + stdEps)). */
  miZscore: number;
  /** EMA of marginalStd across calls. */
  marginalStdEma: number;
  /** mean((matched − marginal) / (marginalStdEma + stdEps)). */
  miZscoreEma: number;
}

/** Retrieval accuracy at one k. */
export interface RetrievalAtK {
  k: number;
  /** Fraction of rows whose own prompt (or an identical one) is among the k best columns. */
  accuracy: number;
  /** Expected accuracy of a random ranking. */
  chance: number;
  aboveChance: number;
}

/** Output of `collapseMetrics`. */
export interface CollapseMetrics extends MIStats {
  /** log N, the largest possible MI under a uniform prompt distribution. */
  miUpperBound: number;
  /** Top-1 retrieval (argmax over prompts of the per-token mean log-prob). */
  retrieval: RetrievalAtK;
  /** Top-2, 4, 8 (k capped at N). */
  retrievalTopK: RetrievalAtK[];
  /** The same statistics from `sumLogProbs` (RAGEN's `_seq` metrics), when given. */
  seq?: MIStats;
  /** EMA state to pass to the next call. */
  ema: { marginalStd: number; marginalStdSeq?: number };
}

function logSumExp(xs: Nums, from: number, n: number): number {
  let m = -Infinity;
  for (let j = 0; j < n; j++) m = Math.max(m, xs[from + j]!);
  if (m === -Infinity) return -Infinity;
  let s = 0;
  for (let j = 0; j < n; j++) s += Math.exp(xs[from + j]! - m);
  return m + Math.log(s);
}

function miStats(
  mat: Nums,
  R: number,
  N: number,
  own: ArrayLike<number>,
  stdEps: number,
  emaDecay: number,
  prevEma: number | undefined,
): MIStats {
  const matched = new Float64Array(R);
  const marginal = new Float64Array(R);
  for (let r = 0; r < R; r++) {
    matched[r] = mat[r * N + own[r]!]!;
    marginal[r] = logSumExp(mat, r * N, N) - Math.log(N);
  }
  const mean = (x: Float64Array): number => x.reduce((a, y) => a + y, 0) / x.length;
  const mm = mean(matched);
  const mg = mean(marginal);
  const std = Math.sqrt(marginal.reduce((a, y) => a + (y - mg) ** 2, 0) / R);
  const ema = prevEma === undefined ? std : emaDecay * prevEma + (1 - emaDecay) * std;
  let z = 0;
  let zEma = 0;
  for (let r = 0; r < R; r++) {
    z += (matched[r]! - marginal[r]!) / (std + stdEps) / R;
    zEma += (matched[r]! - marginal[r]!) / (ema + stdEps) / R;
  }
  return {
    miEstimate: mm - mg,
    conditionalEntropy: -mm,
    reasoningEntropy: -mg,
    matchedLogProbMean: mm,
    marginalLogProbMean: mg,
    marginalStd: std,
    miZscore: z,
    marginalStdEma: ema,
    miZscoreEma: zEma,
  };
}

/** P(a uniformly random k-subset of N columns contains one of c equivalent columns) = 1 − C(N−c, k)/C(N, k). */
function chanceAtK(N: number, c: number, k: number): number {
  let miss = 1;
  for (let i = 0; i < k; i++) miss *= Math.max(0, N - c - i) / (N - i);
  return 1 - miss;
}

/**
 * RAGEN-2's collapse diagnostics (inventory §3.4): with matched = ℓ_own(z) and
 * marginal = logsumexp_j ℓ_j(z) − log N (log-likelihood under the uniform mixture of the batch's prompts),
 * MI = mean(matched − marginal), H(Z|X) = −mean(matched), H(Z) = −mean(marginal); retrieval accuracy =
 * fraction of rows whose best-scoring prompt is its own (identical prompts equivalent), top-k for
 * k = 2, 4, 8; z-scores of matched − marginal by the marginal's std, now and EMA-smoothed.
 * Perfectly distinguishable prompts give MI = log N; identical rows give MI = 0.
 *
 * Difference from RAGEN: top-k chance with identical prompts is exact, 1 − C(N−c, k)/C(N, k), instead
 * of min(1, k·c/N) (the two agree when c = 1). Returns null when N < 2 (MI is undefined).
 */
export function collapseMetrics(input: CollapseInput, opts: CollapseOptions = {}): CollapseMetrics | null {
  const { meanLogProbs, sumLogProbs, R, N, ownColumn } = input;
  if (N < 2 || R < 1) return null;
  if (meanLogProbs.length !== R * N)
    throw new ShapeError(`meanLogProbs has length ${meanLogProbs.length}, expected R*N = ${R}*${N} = ${R * N}.`);
  if (sumLogProbs !== undefined && sumLogProbs.length !== R * N)
    throw new ShapeError(`sumLogProbs has length ${sumLogProbs.length}, expected R*N = ${R * N}.`);
  checkLength('ownColumn', ownColumn, R, 'one per row');
  for (let r = 0; r < R; r++) {
    const c = ownColumn[r]!;
    if (!Number.isInteger(c) || c < 0 || c >= N)
      throw new ShapeError(`ownColumn[${r}] = ${c} is not a column index in [0, ${N}).`);
  }
  const stdEps = opts.stdEps ?? 1e-3;
  const emaDecay = opts.emaDecay ?? 0.9;
  const base = miStats(meanLogProbs, R, N, ownColumn, stdEps, emaDecay, opts.ema?.marginalStd);
  const seq =
    sumLogProbs !== undefined
      ? miStats(sumLogProbs, R, N, ownColumn, stdEps, emaDecay, opts.ema?.marginalStdSeq)
      : undefined;

  // Equivalence classes of columns.
  const keys = input.columnKeys;
  if (keys !== undefined) checkLength('columnKeys', keys, N, 'one per column');
  const classOf = new Int32Array(N);
  const classIds = new Map<number | string, number>();
  for (let j = 0; j < N; j++) {
    const key = keys === undefined ? j : keys[j]!;
    if (!classIds.has(key)) classIds.set(key, classIds.size);
    classOf[j] = classIds.get(key)!;
  }
  const classSize = new Float64Array(classIds.size);
  for (let j = 0; j < N; j++) classSize[classOf[j]!]! += 1;

  const ks = [1, 2, 4, 8].map((k) => Math.min(k, N));
  const hits = new Float64Array(ks.length);
  const chance = new Float64Array(ks.length);
  const cols = Array.from({ length: N }, (_, j) => j);
  for (let r = 0; r < R; r++) {
    const row = (j: number): number => meanLogProbs[r * N + j]!;
    const order = cols.slice().sort((x, y) => row(y) - row(x) || x - y);
    const mine = classOf[ownColumn[r]!]!;
    ks.forEach((k, q) => {
      if (order.slice(0, k).some((j) => classOf[j] === mine)) hits[q]! += 1;
      chance[q]! += chanceAtK(N, classSize[mine]!, k);
    });
  }
  const at = (q: number, k: number): RetrievalAtK => ({
    k,
    accuracy: hits[q]! / R,
    chance: chance[q]! / R,
    aboveChance: (hits[q]! - chance[q]!) / R,
  });
  const out: CollapseMetrics = {
    ...base,
    miUpperBound: Math.log(N),
    retrieval: at(0, 1),
    retrievalTopK: [2, 4, 8].map((k, i) => at(i + 1, k)),
    ema: { marginalStd: base.marginalStdEma, ...(seq !== undefined ? { marginalStdSeq: seq.marginalStdEma } : {}) },
  };
  if (seq !== undefined) out.seq = seq;
  return out;
}

/** Column keys from prompt token ids: identical token sequences get the same key. */
export function promptKeys(prompts: ArrayLike<ArrayLike<number>>): string[] {
  return Array.from({ length: prompts.length }, (_, j) => Array.from(prompts[j]!).join(','));
}
