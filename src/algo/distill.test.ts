import { describe, expect, it } from 'vitest';
import { distillAdvantages } from './distill.js';
import { Rng } from '../util/rng.js';
import { maxGradError, randn } from './testing.js';

/** log-softmax of logits z. */
const logSoftmax = (z: ArrayLike<number>): Float64Array => {
  const m = Math.max(...Array.from(z));
  const lse = m + Math.log(Array.from(z).reduce((a, x) => a + Math.exp(x - m), 0));
  return Float64Array.from(z, (x) => x - lse);
};

describe('distillAdvantages', () => {
  it('is −coef·(log π_student − log π_teacher) per sampled token, 0 elsewhere', () => {
    // Student [−0.5, −2, (−1 masked)], teacher [−1.5, −0.5, −9]; coef 0.5:
    // A = [−0.5·(1), −0.5·(−1.5), 0] = [−0.5, 0.75, 0]; reverse KL = (1 − 1.5)/2 = −0.25; teacher mean = −1.
    const r = distillAdvantages({
      studentLogprobs: [-0.5, -2, -1],
      teacherLogprobs: [-1.5, -0.5, -9],
      mask: [1, 1, 0],
      B: 1,
      T: 3,
      coef: 0.5,
    });
    [-0.5, 0.75, 0].forEach((x, i) => expect(r.advantages[i]).toBeCloseTo(x, 14));
    expect(r.stats.reverseKl).toBeCloseTo(-0.25, 14);
    expect(r.stats.teacherLogprob).toBeCloseTo(-1, 14);
  });
  it('pushes toward the teacher: tokens the teacher likes more than the student get positive advantage', () => {
    const r = distillAdvantages({
      studentLogprobs: [-3, -0.1],
      teacherLogprobs: [-0.2, -4],
      mask: [1, 1],
      B: 1,
      T: 2,
      coef: 1,
    });
    expect(r.advantages[0]).toBeGreaterThan(0);
    expect(r.advantages[1]).toBeLessThan(0);
  });
  it('refuses a non-finite teacher log-prob on a loss token and a negative coef', () => {
    const x = { studentLogprobs: [-1], mask: [1], B: 1, T: 1 };
    expect(() => distillAdvantages({ ...x, teacherLogprobs: [-Infinity], coef: 1 })).toThrow(/must be finite/);
    expect(() => distillAdvantages({ ...x, teacherLogprobs: [-1], coef: -1 })).toThrow(/coef must be ≥ 0/);
  });

  it('its policy gradient is the gradient of the reverse KL: Σ_y π(y)·(−A(y))·∇log π(y) = ∇_z KL(π_z ‖ π_T) (finite differences)', () => {
    // One position, V tokens, student logits z, a fixed teacher. The policy-gradient loss −E_y[A(y) log π(y)] with A
    // stop-gradient has, in expectation over the student's own samples y, the reverse KL's exact gradient: enumerate
    // y with its probability and compare with central differences of KL(softmax(z) ‖ π_T).
    const rng = new Rng(3);
    for (const coef of [1, 0.3]) {
      const V = 7;
      const z = randn(rng, V);
      const teacher = logSoftmax(randn(rng, V, 2));
      const lp = logSoftmax(z);
      const { advantages } = distillAdvantages({
        studentLogprobs: lp,
        teacherLogprobs: teacher,
        mask: new Uint8Array(V).fill(1),
        B: V,
        T: 1,
        coef,
      });
      const grad = new Float64Array(V);
      for (let y = 0; y < V; y++) {
        const p = Math.exp(lp[y]!);
        // ∇_z log π(y) = e_y − π
        for (let k = 0; k < V; k++) grad[k]! += p * -advantages[y]! * ((k === y ? 1 : 0) - Math.exp(lp[k]!));
      }
      const kl = (x: Float64Array) => {
        const l = logSoftmax(x);
        return coef * l.reduce((a, v, y) => a + Math.exp(v) * (v - teacher[y]!), 0);
      };
      expect(maxGradError(kl, z, grad)).toBeLessThan(1e-7);
      expect(Math.max(...Array.from(grad, Math.abs))).toBeGreaterThan(1e-3); // a real gradient, not 0 ≈ 0
    }
  });
});
