import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { addAggNorm, aggLoss, aggNorm, aggWeights, LOSS_AGG_MODES, parseLossAggMode } from './aggregate.js';
import { randMask, randn } from './testing.js';

// Rows: [1, 2, (9)] with 2 loss tokens, [3, (9), (9)] with 1, and an empty row [(9), (9), (9)].
const L = [1, 2, 9, 3, 9, 9, 9, 9, 9];
const M = [1, 1, 0, 1, 0, 0, 0, 0, 0];

describe('aggLoss', () => {
  it('token-mean averages all loss tokens: (1+2+3)/3 = 2', () => {
    expect(aggLoss(L, M, 3, 3, 'token-mean')).toBeCloseTo(2, 12);
  });
  it('seq-mean-token-mean averages per-sequence means, skipping empty rows: (1.5 + 3)/2 = 2.25', () => {
    expect(aggLoss(L, M, 3, 3, 'seq-mean-token-mean')).toBeCloseTo(2.25, 12);
  });
  it('seq-mean-token-sum averages per-sequence sums: (3 + 3)/2 = 3', () => {
    expect(aggLoss(L, M, 3, 3, 'seq-mean-token-sum')).toBeCloseTo(3, 12);
  });
  it('seq-mean-token-sum-norm divides sums by the horizon: (3/3 + 3/3)/2 = 1, or (3/6 + 3/6)/2 with horizon 6', () => {
    expect(aggLoss(L, M, 3, 3, 'seq-mean-token-sum-norm')).toBeCloseTo(1, 12);
    expect(aggLoss(L, M, 3, 3, 'seq-mean-token-sum-norm', aggNorm(M, 3, 3, 6))).toBeCloseTo(0.5, 12);
  });
  it('weights are zero off the mask and sum to 1 for the mean modes', () => {
    const w = aggWeights(M, 3, 3, 'seq-mean-token-mean');
    expect(Array.from(w)).toEqual([0.25, 0.25, 0, 0.5, 0, 0, 0, 0, 0]);
  });
  it('rejects a mask of the wrong shape', () => {
    expect(() => aggLoss(L, M.slice(1), 3, 3, 'token-mean')).toThrow(/length 8/);
  });
});

describe('micro-batch accumulation', () => {
  const rng = new Rng(1);
  const B = 7;
  const T = 6;
  const loss = randn(rng, B * T);
  const mask = randMask(rng, B * T, 0.6);
  const splits = [
    [0, 2],
    [2, 3],
    [3, 7],
  ];
  for (const mode of LOSS_AGG_MODES) {
    it(`${mode}: micro-batch losses with the mini-batch norm sum to the mini-batch loss`, () => {
      const whole = aggLoss(loss, mask, B, T, mode);
      const norm = aggNorm(mask, B, T);
      let sum = 0;
      for (const [a, b] of splits)
        sum += aggLoss(loss.subarray(a! * T, b! * T), mask.subarray(a! * T, b! * T), b! - a!, T, mode, norm);
      expect(sum).toBeCloseTo(whole, 12);
    });
  }
  it('token-mean normalised per micro-batch (veRL) differs from the mini-batch loss', () => {
    const whole = aggLoss(loss, mask, B, T, 'token-mean');
    let veRL = 0;
    for (const [a, b] of splits)
      veRL +=
        aggLoss(loss.subarray(a! * T, b! * T), mask.subarray(a! * T, b! * T), b! - a!, T, 'token-mean') / splits.length;
    expect(Math.abs(veRL - whole)).toBeGreaterThan(1e-3);
  });
});

describe('addAggNorm', () => {
  it('adds the counts of micro-batches: rows [0, 1] (3 tokens, 2 sequences) + row 2 (empty) = the whole', () => {
    const a = aggNorm(M.slice(0, 6), 2, 3);
    const b = aggNorm(M.slice(6), 1, 3);
    expect(a).toEqual({ tokens: 3, seqs: 2, horizon: 3 });
    expect(b).toEqual({ tokens: 0, seqs: 0, horizon: 3 });
    expect(addAggNorm(a, b)).toEqual(aggNorm(M, 3, 3));
  });
});

describe('parseLossAggMode', () => {
  it('accepts the literature names and suggests the nearest on a typo', () => {
    expect(parseLossAggMode('seq-mean-token-sum')).toBe('seq-mean-token-sum');
    expect(() => parseLossAggMode('token_mean')).toThrow(ConfigError);
    expect(() => parseLossAggMode('token_mean')).toThrow(/Did you mean `token-mean`/);
  });
});
