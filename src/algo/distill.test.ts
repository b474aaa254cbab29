import { describe, expect, it } from 'vitest';
import { distillAdvantages } from './distill.js';

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
});
