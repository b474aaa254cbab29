import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { aggNorm, LOSS_AGG_MODES } from './aggregate.js';
import {
  applyKLPenalty,
  KL_ESTIMATORS,
  KLController,
  klLoss,
  klPenalty,
  parseKLEstimator,
  updateKLCoef,
} from './kl.js';
import { maxGradError, randMask, randn } from './testing.js';

describe('klPenalty at known points', () => {
  // Δ = logπ − logπ_ref = +1 (logπ = −1, ref = −2) and −1 (logπ = −2, ref = −1).
  const lp = [-1, -2];
  const ref = [-2, -1];
  it('k1 = Δ', () => expect(Array.from(klPenalty(lp, ref, 'k1').kl)).toEqual([1, -1]));
  it('k2 = Δ²/2', () => expect(Array.from(klPenalty(lp, ref, 'k2').kl)).toEqual([0.5, 0.5]));
  it('abs = |Δ|', () => expect(Array.from(klPenalty(lp, ref, 'abs').kl)).toEqual([1, 1]));
  it('k3 = e^{−Δ} + Δ − 1: e^{−1} ≈ 0.367879 and e − 2 ≈ 0.718282', () => {
    const k = klPenalty(lp, ref, 'k3').kl;
    expect(k[0]).toBeCloseTo(0.36787944, 7);
    expect(k[1]).toBeCloseTo(0.71828183, 7);
  });
  it('k3 is zero when the policies agree', () => expect(klPenalty([-0.3], [-0.3], 'k3').kl[0]).toBe(0));
  it('k3 clamps the result to 10 (with zero gradient) far from the reference', () => {
    const r = klPenalty([-30], [0], 'k3'); // ref − logπ = 30 -> clamped to 20 -> e^20 − 21 > 10
    expect(r.kl[0]).toBe(10);
    expect(r.grad[0]).toBe(0);
  });
  it('straight-through forms keep the value and take the k2 gradient Δ', () => {
    const st = klPenalty(lp, ref, 'k3+');
    expect(Array.from(st.kl)).toEqual(Array.from(klPenalty(lp, ref, 'k3').kl));
    expect(Array.from(st.grad)).toEqual([1, -1]);
  });
});

describe('klPenalty gradients', () => {
  const rng = new Rng(11);
  const ref = randn(rng, 12, 0.7);
  const lp = randn(rng, 12, 0.7);
  for (const est of ['k1', 'k2', 'k3', 'abs'] as const) {
    it(`${est} matches central differences`, () => {
      const { grad } = klPenalty(lp, ref, est);
      // Each kl_t depends only on logπ_t, so d(Σ kl)/d logπ_t = grad_t.
      const f = (x: Float64Array): number => klPenalty(x, ref, est).kl.reduce((a, y) => a + y, 0);
      expect(maxGradError(f, lp, grad)).toBeLessThan(1e-7);
    });
  }
});

describe('klLoss', () => {
  it('k3 by hand: two one-token rows, coef 0.5, seq-mean-token-sum', () => {
    // Row 0: ref − logπ = −1 -> k3 = e^−1, d/dlogπ = 1 − e^−1. Row 1: ref − logπ = 1 -> k3 = e − 2, d/dlogπ = 1 − e.
    // Loss = 0.5·(e^−1 + e − 2)/2; each row's weight is 1/2, so grad = 0.25·(1 − e^−1), 0.25·(1 − e).
    const r = klLoss({
      logprobs: [-1, -2],
      refLogprobs: [-2, -1],
      mask: [1, 1],
      B: 2,
      T: 1,
      estimator: 'k3',
      coef: 0.5,
      lossAgg: 'seq-mean-token-sum',
    });
    expect(r.loss).toBeCloseTo((0.5 * (Math.exp(-1) + Math.E - 2)) / 2, 14);
    expect(r.grad.logprobs[0]).toBeCloseTo(0.25 * (1 - Math.exp(-1)), 14);
    expect(r.grad.logprobs[1]).toBeCloseTo(0.25 * (1 - Math.E), 14);
    expect(r.stats.kl).toBeCloseTo((Math.exp(-1) + Math.E - 2) / 2, 14);
  });
  it('coef · agg(kl) with its exact gradient, in every aggregation mode', () => {
    const rng = new Rng(5);
    const B = 3;
    const T = 4;
    const lp = randn(rng, B * T, 0.5);
    const ref = randn(rng, B * T, 0.5);
    const mask = randMask(rng, B * T);
    for (const lossAgg of LOSS_AGG_MODES) {
      for (const estimator of ['k1', 'k3', 'k2'] as const) {
        const args = { refLogprobs: ref, mask, B, T, estimator, coef: 0.3, lossAgg };
        const r = klLoss({ ...args, logprobs: lp });
        expect(maxGradError((x) => klLoss({ ...args, logprobs: x }).loss, lp, r.grad.logprobs)).toBeLessThan(1e-7);
      }
    }
  });
  it('is invariant to splitting the batch with the mini-batch norm', () => {
    const lp = [-1, -2, -0.5, -1.5];
    const ref = [-1.5, -1, -0.5, -1];
    const mask = [1, 1, 1, 0];
    const norm = aggNorm(mask, 2, 2);
    const whole = klLoss({
      logprobs: lp,
      refLogprobs: ref,
      mask,
      B: 2,
      T: 2,
      estimator: 'k3',
      coef: 1,
      lossAgg: 'token-mean',
    }).loss;
    const a = klLoss({
      logprobs: lp.slice(0, 2),
      refLogprobs: ref.slice(0, 2),
      mask: mask.slice(0, 2),
      B: 1,
      T: 2,
      estimator: 'k3',
      coef: 1,
      lossAgg: 'token-mean',
      norm,
    }).loss;
    const b = klLoss({
      logprobs: lp.slice(2),
      refLogprobs: ref.slice(2),
      mask: mask.slice(2),
      B: 1,
      T: 2,
      estimator: 'k3',
      coef: 1,
      lossAgg: 'token-mean',
      norm,
    }).loss;
    expect(a + b).toBeCloseTo(whole, 14);
  });
});

describe('KL in reward', () => {
  it('subtracts β·KL on loss tokens and reports the mean of per-sequence mean KL', () => {
    // Row 0: k1 = [0.5, −0.1] (both in loss), row 1: [0.2, (ignored)]. β = 0.1.
    // rewards [0, 1 | 0, 3] -> [−0.05, 1.01 | −0.02, 3]; currentKl = mean(0.2, 0.2) = 0.2.
    const r = applyKLPenalty({
      rewards: [0, 1, 0, 3],
      logprobs: [-1, -2.1, -1, -5],
      refLogprobs: [-1.5, -2, -1.2, -1],
      mask: [1, 1, 1, 0],
      B: 2,
      T: 2,
      beta: 0.1,
      estimator: 'k1',
    });
    [-0.05, 1.01, -0.02, 3].forEach((w, i) => expect(r.rewards[i]).toBeCloseTo(w, 12));
    expect(r.currentKl).toBeCloseTo(0.2, 12);
  });

  it('adaptive controller: β·(1 + clip(KL/target − 1, ±0.2)·n/horizon)', () => {
    const ctrl = { type: 'adaptive', klCoef: 0.1, targetKl: 6, horizon: 10000 } as const;
    // KL 9: error 0.5 -> 0.2; β = 0.1·(1 + 0.2·100/10000) = 0.1002. KL 3: error −0.5 -> −0.2; β = 0.0998.
    expect(updateKLCoef(ctrl, 0.1, 9, 100)).toBeCloseTo(0.1002, 12);
    expect(updateKLCoef(ctrl, 0.1, 3, 100)).toBeCloseTo(0.0998, 12);
    // KL 6.6: error 0.1 -> β = 0.1·(1 + 0.1·0.01) = 0.1001.
    expect(updateKLCoef(ctrl, 0.1, 6.6, 100)).toBeCloseTo(0.1001, 12);
    const c = new KLController(ctrl);
    c.update(9, 100);
    c.update(9, 100);
    expect(c.value).toBeCloseTo(0.1 * 1.002 * 1.002, 12);
    expect(new KLController({ type: 'fixed', klCoef: 0.05 }).update(100, 100)).toBe(0.05);
  });
});

describe('parseKLEstimator', () => {
  it("accepts veRL names and rejects RAGEN scripts' `low-var-kl` with a suggestion", () => {
    expect(parseKLEstimator('low_var_kl')).toBe('k3');
    expect(parseKLEstimator('kl')).toBe('k1');
    expect(parseKLEstimator('mse+')).toBe('k2+');
    expect(KL_ESTIMATORS).toContain('abs+');
    expect(() => parseKLEstimator('low-var-kl')).toThrow(ConfigError);
    expect(() => parseKLEstimator('low-var-kl')).toThrow(/Did you mean `low_var_kl`/);
  });
});
