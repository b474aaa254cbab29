import { describe, expect, it } from 'vitest';
import { collapseMetrics, promptKeys } from './collapse.js';

/** R×N matrix from a function of (row, column). */
function matrix(R: number, N: number, f: (r: number, j: number) => number): Float64Array {
  return Float64Array.from({ length: R * N }, (_, i) => f(Math.floor(i / N), i % N));
}

describe('collapseMetrics', () => {
  it('perfectly distinguishable prompts give MI = log N and perfect retrieval', () => {
    // 4 prompts x 2 samples; own prompt log-prob 0, others −60 (e^−60 ≈ 1e−26 is negligible).
    // matched = 0, marginal = log(1 + 3e^−60) − log 4 ≈ −log 4 -> MI = log 4; H(Z|X) = 0; H(Z) = log 4.
    const N = 4;
    const own = [0, 0, 1, 1, 2, 2, 3, 3];
    const m = collapseMetrics({
      meanLogProbs: matrix(8, N, (r, j) => (j === own[r] ? 0 : -60)),
      R: 8,
      N,
      ownColumn: own,
    })!;
    expect(m.miEstimate).toBeCloseTo(Math.log(4), 12);
    expect(m.miUpperBound).toBeCloseTo(Math.log(4), 12);
    expect(m.conditionalEntropy).toBeCloseTo(0, 12);
    expect(m.reasoningEntropy).toBeCloseTo(Math.log(4), 12);
    expect(m.retrieval.accuracy).toBe(1);
    expect(m.retrieval.chance).toBeCloseTo(1 / 4, 12);
    expect(m.retrieval.aboveChance).toBeCloseTo(3 / 4, 12);
    // k = 2: chance 2/4; k = 4 and 8 (capped at N = 4): chance 1.
    expect(m.retrievalTopK.map((x) => x.chance)).toEqual([0.5, 1, 1]);
    expect(m.retrievalTopK.map((x) => x.accuracy)).toEqual([1, 1, 1]);
  });

  it('identical rows (reasoning independent of the prompt) give MI = 0 and chance retrieval', () => {
    // Row r scores −(r + 1) under every prompt: matched = marginal = −(r + 1) -> MI 0;
    // H(Z|X) = H(Z) = mean(r + 1) = 2.5 over 4 rows; ties go to column 0, owned by 1 row of 4.
    const own = [0, 1, 2, 3];
    const m = collapseMetrics({ meanLogProbs: matrix(4, 4, (r) => -(r + 1)), R: 4, N: 4, ownColumn: own })!;
    expect(m.miEstimate).toBeCloseTo(0, 12);
    expect(m.conditionalEntropy).toBeCloseTo(2.5, 12);
    expect(m.reasoningEntropy).toBeCloseTo(2.5, 12);
    expect(m.retrieval.accuracy).toBe(0.25);
    expect(m.retrieval.aboveChance).toBeCloseTo(0, 12);
    expect(m.miZscore).toBeCloseTo(0, 12);
  });

  it('a 2×2 matrix worked by hand', () => {
    // Row 0 (own 0): probabilities (0.8, 0.2); row 1 (own 1): (0.4, 0.6).
    // matched = [log 0.8, log 0.6]; marginal = [log 0.5, log 0.5].
    // MI = (log 0.8 + log 0.6)/2 − log 0.5 = (−0.2231436 − 0.5108256)/2 + 0.6931472 = 0.3261626.
    // The marginal does not vary, so std = 0 and z = 0.3261626 / (0 + 1e−3) = 326.1626.
    // Sums are twice the means (2 tokens each): the seq MI is 0.652324... minus a different marginal:
    // marginal_seq = log((0.64 + 0.04)/2) = log 0.34 and log((0.16 + 0.36)/2) = log 0.26.
    const mean = [Math.log(0.8), Math.log(0.2), Math.log(0.4), Math.log(0.6)];
    const sum = mean.map((x) => 2 * x);
    const m = collapseMetrics({ meanLogProbs: mean, sumLogProbs: sum, R: 2, N: 2, ownColumn: [0, 1] })!;
    const mi = (Math.log(0.8) + Math.log(0.6)) / 2 - Math.log(0.5);
    expect(m.miEstimate).toBeCloseTo(mi, 12);
    expect(m.miEstimate).toBeCloseTo(0.3261626, 6);
    expect(m.marginalStd).toBeCloseTo(0, 12);
    expect(m.miZscore).toBeCloseTo(mi / 1e-3, 6);
    const miSeq = (2 * Math.log(0.8) + 2 * Math.log(0.6)) / 2 - (Math.log(0.34) + Math.log(0.26)) / 2;
    expect(m.seq!.miEstimate).toBeCloseTo(miSeq, 12);
    // Population std of [log 0.34, log 0.26] = |log 0.34 − log 0.26| / 2.
    expect(m.seq!.marginalStd).toBeCloseTo(Math.abs(Math.log(0.34 / 0.26)) / 2, 12);
    expect(m.retrieval.accuracy).toBe(1);
  });

  it('treats identical prompts as equivalent for retrieval, with exact chance', () => {
    // Columns 0 and 1 are the same prompt ('a'), column 2 another ('b'). Rows own column 1 but score
    // columns 0 and 1 equally (argmax picks 0): still correct. Chance for class 'a' is 2/3; top-2 chance is
    // 1 − C(1, 2)/C(3, 2) = 1. The row owning 'b' has chance 1/3 and top-2 chance 1 − C(2,2)/C(3,2) = 2/3.
    const keys = promptKeys([[5, 6], [5, 6], [7]]);
    expect(keys[0]).toBe(keys[1]);
    const mean = [-1, -1, -3, -1, -1, -3, -2, -2, -0.5];
    const m = collapseMetrics({ meanLogProbs: mean, R: 3, N: 3, ownColumn: [1, 1, 2], columnKeys: keys })!;
    expect(m.retrieval.accuracy).toBe(1);
    expect(m.retrieval.chance).toBeCloseTo((2 / 3 + 2 / 3 + 1 / 3) / 3, 12);
    expect(m.retrievalTopK[0]!.chance).toBeCloseTo((1 + 1 + 2 / 3) / 3, 12);
    // Without the equivalence, the first two rows would miss at top-1.
    expect(collapseMetrics({ meanLogProbs: mean, R: 3, N: 3, ownColumn: [1, 1, 2] })!.retrieval.accuracy).toBeCloseTo(
      1 / 3,
      12,
    );
  });

  it('smooths the marginal std with an EMA carried between calls', () => {
    // The first call starts the EMA at the current std s; a call with a previous EMA of 1 gives 0.9·1 + 0.1·s.
    // Rows [0, −1] (own 0) and [−2, 0] (own 1): matched 0 and 0; marginals m0 = log((1 + e^−1)/2) ≈ −0.37989,
    // m1 = log((e^−2 + 1)/2) ≈ −0.56622; population std s = |m0 − m1|/2 ≈ 0.09317; MI = −(m0 + m1)/2.
    const m0 = Math.log((1 + Math.exp(-1)) / 2);
    const m1 = Math.log((Math.exp(-2) + 1) / 2);
    const s = Math.abs(m0 - m1) / 2;
    const mi = -(m0 + m1) / 2;
    const mean = [0, -1, -2, 0];
    const first = collapseMetrics({ meanLogProbs: mean, R: 2, N: 2, ownColumn: [0, 1] })!;
    expect(first.marginalStd).toBeCloseTo(s, 14);
    expect(first.miEstimate).toBeCloseTo(mi, 14);
    expect(first.marginalStdEma).toBeCloseTo(s, 14);
    expect(first.miZscore).toBeCloseTo(mi / (s + 1e-3), 10);
    const second = collapseMetrics({ meanLogProbs: mean, R: 2, N: 2, ownColumn: [0, 1] }, { ema: { marginalStd: 1 } })!;
    expect(second.marginalStdEma).toBeCloseTo(0.9 + 0.1 * s, 14);
    // mean((matched − marginal)/σ_ema) = MI/(σ_ema + 1e-3) since σ_ema is the same for every row.
    expect(second.miZscoreEma).toBeCloseTo(mi / (0.9 + 0.1 * s + 1e-3), 12);
    expect(second.ema.marginalStd).toBeCloseTo(0.9 + 0.1 * s, 14);
  });

  it('returns null with fewer than two prompts and rejects bad columns', () => {
    expect(collapseMetrics({ meanLogProbs: [0, 0], R: 2, N: 1, ownColumn: [0, 0] })).toBeNull();
    expect(() => collapseMetrics({ meanLogProbs: [0, 0, 0, 0], R: 2, N: 2, ownColumn: [0, 2] })).toThrow(
      /ownColumn\[1\]/,
    );
  });
});
