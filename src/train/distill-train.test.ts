// Trainer-level direction tests of on-policy distillation (`algo.distill`): whole StarPO steps against a
// RecordingEngine with a scripted teacher; the gradients handed to the engine must be the documented advantages
// (GRPO's + coef·(log π_teacher − log π_old), or the distillation term alone), computed independently here. Flipping
// the reverse KL's sign, dropping it or mixing the modes fails them.
import { describe, expect, it } from 'vitest';
import { collate, EnvGroups, type TrainingSample } from '../agent/index.js';
import { registerTestCorridor } from '../agent/testing.js';
import { KLController } from '../algo/index.js';
import { LocalEngine, type SequenceBatch } from '../engine/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { checkRunConfig, envGroupsOptions, loadConfig } from '../config/index.js';
import { starpoStep } from './step.js';
import type { Teacher } from './teacher.js';
import { localEngineOptions, modelTokenizer } from './engine-setup.js';
import { corridorScript, corridorStep, LEARNING_SMOKE, RecordingEngine } from './testing.js';

registerTestCorridor();
const tokenizer = loadTokenizer(tinyTokenizerDir());
const tiny = modelTokenizer(LEARNING_SMOKE.MODEL);
/** The teacher likes even token ids (log-prob −0.05) and dislikes odd ones (−3). */
const teacherLogprob = (id: number) => (id % 2 === 0 ? -0.05 : -3);
/** π_old of the RecordingEngine's recompute at position t (its default `oldLogprob`, restated here). */
const oldLogprob = (t: number) => -0.4 - 0.05 * (t % 5);

const scriptedTeacher = (): Teacher & { calls: number } => ({
  source: 'scripted',
  calls: 0,
  async logprobs(b: SequenceBatch) {
    this.calls++;
    const out = new Float32Array(b.B * b.T);
    for (let r = 0; r < b.B; r++)
      for (let t = 1; t < b.lengths[r]!; t++) out[r * b.T + t] = teacherLogprob(b.ids[r * b.T + t]!);
    return out;
  },
  dispose() {},
});

/** One GRPO step on the corridor (src/train/testing.ts) with the scripted teacher, KL controller at 0. */
async function step(overrides: string[]) {
  const teacher = scriptedTeacher();
  const { out, samples, engine } = await corridorStep(
    tokenizer,
    ['algo.advEstimator=grpo', 'algo.distill.teacher=scripted-in-the-test', ...overrides],
    { outputs: { oldLogprob }, teacher, kl: 0 },
  );
  const calls = engine.backwards.filter((b) => b.role === 'policy');
  expect(calls).toHaveLength(1);
  expect(teacher.calls).toBe(1);
  return { out, samples, policy: calls[0]! };
}

const lossTokens = (s: TrainingSample) => s.lossMask.flatMap((m, t) => (m ? [t] : []));

/** GRPO by its definition: (s − group mean) / (unbiased group std + 1e-6). */
function grpo(samples: TrainingSample[]): number[] {
  return samples.map((s) => {
    const g = samples.filter((o) => o.group === s.group && o.tag === s.tag).map((o) => o.score);
    const mean = g.reduce((a, x) => a + x, 0) / g.length;
    const std = Math.sqrt(g.reduce((a, x) => a + (x - mean) ** 2, 0) / (g.length - 1));
    return (s.score - mean) / (std + 1e-6);
  });
}

describe('algo.distill reaches the gradient', () => {
  it('alone: d loss / d log π = −coef·(log π_teacher − log π_old)/N, negative on the tokens the teacher prefers', async () => {
    const coef = 0.5;
    const { samples, policy, out } = await step(['algo.distill.mode=alone', `algo.distill.coef=${coef}`]);
    const N = samples.reduce((n, s) => n + lossTokens(s).length, 0);
    let towardTeacher = 0;
    samples.forEach((s, row) => {
      for (let t = 1; t < s.ids.length; t++) {
        const g = policy.grads.logprobs![row * policy.T + t]!;
        if (!s.lossMask[t]) {
          expect(g).toBe(0);
          continue;
        }
        const want = (-coef * (teacherLogprob(s.ids[t]!) - oldLogprob(t))) / N;
        expect(g, `row ${row}, token ${t}`).toBeCloseTo(want, 6);
        // gradient descent raises log π where the gradient is negative: exactly the teacher-preferred (even) ids
        if (s.ids[t]! % 2 === 0) {
          expect(g).toBeLessThan(0);
          towardTeacher++;
        } else expect(g).toBeGreaterThan(0);
      }
    });
    expect(towardTeacher).toBeGreaterThan(0);
    const tokens = samples.flatMap((s) => lossTokens(s).map((t) => ({ id: s.ids[t]!, t })));
    const kl = tokens.reduce((a, x) => a + oldLogprob(x.t) - teacherLogprob(x.id), 0) / tokens.length;
    expect(out.metrics['distill/reverse_kl']).toBeCloseTo(kl, 5);
    expect(out.metrics['distill/tokens']).toBe(tokens.length);
  });

  it('add: the environment’s GRPO advantage plus the distillation term', async () => {
    const { samples, policy } = await step(['algo.distill.mode=add', 'algo.distill.coef=2']);
    const A = grpo(samples);
    expect(A.some((a) => Math.abs(a) > 0.1)).toBe(true);
    const N = samples.reduce((n, s) => n + lossTokens(s).length, 0);
    samples.forEach((s, row) => {
      for (const t of lossTokens(s)) {
        const want = -(A[row]! + 2 * (teacherLogprob(s.ids[t]!) - oldLogprob(t))) / N;
        expect(policy.grads.logprobs![row * policy.T + t], `row ${row}, token ${t}`).toBeCloseTo(want, 5);
      }
    });
  });

  it('a step with algo.distill.teacher but no teacher opened is an error, not a silent RL step', async () => {
    const config = loadConfig({
      overrides: [
        'algo.distill.teacher=x',
        'env.train=[{tag: TestCorridor, groups: 1, groupSize: 2}]',
        'trainer.miniBatchSize=2',
        'trainer.microBatchSize=2',
      ],
    });
    const engine = new RecordingEngine(tokenizer, corridorScript);
    const groups = new EnvGroups(envGroupsOptions(config, 'train'));
    try {
      await expect(
        starpoStep(
          {
            config,
            engine,
            tokenizer,
            agent: config.agent,
            groups,
            kl: new KLController({ type: 'fixed', klCoef: 0 }),
            collapseEma: {},
          },
          1,
        ),
      ).rejects.toThrow(/no teacher was opened/);
    } finally {
      await groups.close();
    }
  });

  it('mode alone without a teacher is refused by the run check', () => {
    const config = loadConfig({ overrides: ['algo.distill.mode=alone'] });
    expect(() => checkRunConfig(config, { skipModel: true })).toThrow(
      /algo.distill.mode.*alone.*algo.distill.teacher/s,
    );
  });
});

describe('algo.distill on the shipped model', () => {
  it('moves the student away from the token the teacher dislikes (alone, 3 steps)', async () => {
    // The teacher dislikes `Right` (log-prob −4), likes `Left` (−0.05) and is near the student elsewhere (−0.1).
    // Measured: Right's log-prob falls 0.42 more than the other tokens'; with the advantage's sign flipped in
    // src/algo/distill.ts it rises 0.36 more.
    const [LEFT, RIGHT] = [tiny.encode('Left'), tiny.encode('Right')].map((ids) => ids[0]!);
    const teacher: Teacher = {
      source: 'scripted',
      async logprobs(b: SequenceBatch) {
        const out = new Float32Array(b.B * b.T);
        for (let r = 0; r < b.B; r++)
          for (let t = 1; t < b.lengths[r]!; t++) {
            const id = b.ids[r * b.T + t]!;
            out[r * b.T + t] = id === LEFT ? -0.05 : id === RIGHT ? -4 : -0.1;
          }
        return out;
      },
      dispose() {},
    };
    const config = loadConfig({
      overrides: [
        'logging.console=none',
        `model.path=${LEARNING_SMOKE.MODEL}`,
        'env.train=[{tag: TestCorridor, groups: 2, groupSize: 4}]',
        'env.val=[{tag: TestCorridor, groups: 1}]',
        'env.config.TestCorridor.length=3',
        'agent.maxTurns=2',
        'agent.maxNewTokens=24',
        'trainer.miniBatchSize=8',
        'trainer.microBatchSize=8',
        'trainer.actorLr=3e-4',
        'trainer.collapse.every=0',
        'algo.advEstimator=grpo',
        'algo.entropyCoeff=0',
        'algo.distill.teacher=scripted-in-the-test',
        'algo.distill.mode=alone',
      ],
    });
    const engine = await LocalEngine.fromPretrained(LEARNING_SMOKE.MODEL, localEngineOptions(config));
    const groups = new EnvGroups(envGroupsOptions(config, 'train'));
    const ctx = {
      config,
      engine,
      tokenizer: tiny,
      agent: config.agent,
      groups,
      kl: new KLController({ type: 'fixed', klCoef: 0 }),
      collapseEma: {},
      teacher,
    };
    try {
      const first = await starpoStep(ctx, 1);
      const batch = collate(first.rollout.samples, tiny.padTokenId);
      // the first rollout's tokens scored by the student as it was after step 1 and after step 3
      const before = (await engine.forward(batch, { role: 'policy' })).logprobs;
      await starpoStep(ctx, 2);
      await starpoStep(ctx, 3);
      const after = (await engine.forward(batch, { role: 'policy' })).logprobs;
      const shift = { right: [] as number[], rest: [] as number[] };
      for (let i = 0; i < batch.B * batch.T; i++)
        if (batch.lossMask[i] && batch.ids[i] !== LEFT)
          shift[batch.ids[i] === RIGHT ? 'right' : 'rest'].push(after[i]! - before[i]!);
      const mean = (x: number[]) => x.reduce((a, v) => a + v, 0) / x.length;
      expect(shift.right.length, 'the student answers Right somewhere in the first rollout').toBeGreaterThan(0);
      const gap = mean(shift.right) - mean(shift.rest);
      expect(gap, `Right ${mean(shift.right)}, the other tokens ${mean(shift.rest)}`).toBeLessThan(-0.1);
    } finally {
      await groups.close();
      engine.dispose();
    }
  }, 120_000);
});
