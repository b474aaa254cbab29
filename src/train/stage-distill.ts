// Stage distill (`algo.distill`, between score and advantages): the teacher scores the kept rows' own sampled tokens
// and src/algo's `distillAdvantages` turns the reverse KL per token into advantages, which stage advantages adds to
// (or puts in place of) the environment's.
import { distillAdvantages } from '../algo/index.js';
import { maskedStats } from './batch.js';
import { family, seconds, type StageOutput, type StepBatch, type StepSettings } from './step-batch.js';
import type { Teacher } from './teacher.js';

/**
 * The teacher's log-probs of `b.tokens` and the distillation advantages −coef·(log π_old − log π_teacher) on their
 * loss tokens; π_old (`b.oldLogprobs`) is the student that sampled them.
 */
export async function distillStage(
  b: Pick<StepBatch, 'tokens' | 'oldLogprobs'>,
  s: NonNullable<StepSettings['distill']>,
  teacher: Teacher,
): Promise<StageOutput<'teacherLogprobs' | 'distillAdvantages'>> {
  const t0 = performance.now();
  const { tokens, oldLogprobs } = b;
  const { B, T } = tokens;
  const teacherLogprobs = await teacher.logprobs(tokens);
  if (teacherLogprobs.length !== B * T)
    throw new RangeError(
      `distillStage: the teacher (${teacher.source}) returned ${teacherLogprobs.length} log-probs for a (${B}, ${T}) batch.`,
    );
  const { advantages, stats } = distillAdvantages({
    studentLogprobs: oldLogprobs,
    teacherLogprobs,
    mask: tokens.lossMask,
    B,
    T,
    coef: s.coef,
  });
  const a = maskedStats(advantages, tokens.lossMask);
  return {
    teacherLogprobs,
    distillAdvantages: advantages,
    metrics: {
      ...family('distill', {
        reverse_kl: stats.reverseKl,
        teacher_logprob: stats.teacherLogprob,
        student_logprob: stats.teacherLogprob + stats.reverseKl,
        advantage_mean: a.mean,
        advantage_min: a.min,
        advantage_max: a.max,
        tokens: stats.tokens,
      }),
      ...family('timing_s', { distill: seconds(t0) }),
    },
  };
}
