// On-policy distillation: the student samples, a teacher scores the student's own tokens, and the per-token reverse KL
// between them becomes the advantage (no critic, no reward needed).
import { checkTokens, type Nums, type TokenMask } from './shape.js';

/**
 * Per-token advantages of on-policy distillation (Agarwal et al. 2024, "On-Policy Distillation of Language Models:
 * Learning from Self-Generated Mistakes" (GKD); Lu & Thinking Machines 2025, "On-Policy Distillation"; veRL's and
 * tinker-cookbook's recipes): on each sampled token y_t, A_t = −coef·(log π_student(y_t) − log π_teacher(y_t)), the
 * negated one-sample estimate of the reverse KL(π_student ‖ π_teacher) at that position, with no discounting across
 * tokens. A policy-gradient step on these advantages lowers the reverse KL on the student's own samples; they stand
 * alone or are added to the environment's advantages. `studentLogprobs` are the log-probs the student sampled with (or
 * π_old), held constant in the update. Stats: the mean reverse KL estimate (k1) and the mean teacher log-prob.
 */
export function distillAdvantages(a: {
  studentLogprobs: Nums;
  teacherLogprobs: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  coef: number;
}): { advantages: Float64Array; stats: { reverseKl: number; teacherLogprob: number; tokens: number } } {
  const { studentLogprobs, teacherLogprobs, mask, B, T, coef } = a;
  checkTokens('studentLogprobs', studentLogprobs, B, T);
  checkTokens('teacherLogprobs', teacherLogprobs, B, T);
  checkTokens('mask', mask, B, T);
  if (!(coef >= 0)) throw new RangeError(`distillAdvantages: coef must be ≥ 0, got ${coef}.`);
  const advantages = new Float64Array(B * T);
  let n = 0;
  let kl = 0;
  let teacher = 0;
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) continue;
    const t = teacherLogprobs[i]!;
    if (!Number.isFinite(t))
      throw new RangeError(`distillAdvantages: the teacher's log-prob of token ${i} is ${t}; it must be finite.`);
    const d = studentLogprobs[i]! - t;
    advantages[i] = -coef * d;
    kl += d;
    teacher += t;
    n++;
  }
  return {
    advantages,
    stats: { reverseKl: n > 0 ? kl / n : 0, teacherLogprob: n > 0 ? teacher / n : 0, tokens: n },
  };
}
