import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import '../envs/index.js';
import { MetricLogger, readMetricsFile } from '../metrics/index.js';
import { CheckpointError, ConfigError } from '../util/index.js';
import { loadConfig } from '../config/index.js';
import { readCheckpoint } from './checkpoint-io.js';
import { openLocalModels as openModels } from './engine-setup.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let runs = 0;
const runDir = () => join(root, `run-${++runs}`);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-trainer-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function weights(dir: string): Promise<Float32Array[]> {
  const { engine } = await openModels(microConfig(model, join(root, 'unused')), dir);
  const w = [...engine.parameters('policy'), ...engine.parameters('critic')].map(([, t]) => t.toFloat32Array());
  engine.dispose();
  return w;
}

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  a.forEach((x, i) => x.forEach((v, j) => (m = Math.max(m, Math.abs(v - b[i]![j]!)))));
  return m;
}

describe('train (StarPO on a micro model)', () => {
  it('PPO with a critic: finite losses and every trainable parameter of policy and critic changes', async () => {
    const config = microConfig(model, runDir(), ['trainer.weightDecay=0']);
    const models = await openModels(config);
    const before = [...models.engine.parameters('policy'), ...models.engine.parameters('critic')].map(
      ([n, t]) => [n, t.toFloat32Array()] as const,
    );
    const r = await train({ config, models });
    expect(r.lastStep).toBe(2);
    const after = [...models.engine.parameters('policy'), ...models.engine.parameters('critic')];
    after.forEach(([name, t], i) => expect(t.toFloat32Array(), name).not.toEqual(before[i]![1]));
    models.engine.dispose();
    const m = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual([1, 2]);
    for (const rec of m) {
      for (const key of [
        'actor/pg_loss',
        'actor/grad_norm',
        'actor/entropy',
        'critic/vf_loss',
        'critic/grad_norm',
        'train/reward_mean',
      ]) {
        expect(Number.isFinite(rec[key]), `${key} at step ${rec.step}`).toBe(true);
      }
      expect(rec['train/batch_size']).toBe(8);
      expect(rec['train/num_mini_batches']).toBe(2); // 8 sequences / mini-batches of 4
    }
    const rollouts = readFileSync(join(r.runDir, 'rollouts', 'step-2.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rollouts).toHaveLength(8);
    expect(rollouts[0].turns[0]).toMatchObject({
      turn: 0,
      observation: expect.any(String),
      response: expect.any(String),
      advantage: expect.any(Number),
    });
  });

  it('GRPO runs without a critic', async () => {
    const r = await train({
      config: microConfig(model, runDir(), [
        'algo.advEstimator=grpo',
        'algo.lossAgg=seq-mean-token-mean',
        'trainer.steps=1',
      ]),
    });
    const [m] = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
    expect(Number.isFinite(m!['actor/pg_loss'])).toBe(true);
    expect(m!['critic/vf_loss']).toBeUndefined();
  });

  it.each([
    ['dr_grpo', ['algo.advEstimator=dr_grpo', 'algo.lossAgg=seq-mean-token-sum-norm']],
    ['rloo', ['algo.advEstimator=rloo']],
    ['reinforce_pp', ['algo.advEstimator=reinforce_pp']],
    ['reinforce_pp_baseline', ['algo.advEstimator=reinforce_pp_baseline', 'algo.rewardNorm.method=mean_std']],
    [
      'bi_level_gae, KL in the reward with the adaptive controller',
      [
        'algo.advEstimator=bi_level_gae',
        'algo.kl.inReward=true',
        'algo.kl.coef=0.01',
        'algo.kl.controller.type=adaptive',
      ],
    ],
    [
      'per-turn samples (limited_multi_turn, turn rewards), 2 PPO epochs',
      [
        'agent.contextWindowMode=limited_multi_turn',
        'agent.maxContextWindow=1',
        'agent.useTurnScores=true',
        'trainer.ppoEpochs=2',
      ],
    ],
  ])('%s: one finite step', async (_name, extra) => {
    const r = await train({ config: microConfig(model, runDir(), ['trainer.steps=1', ...extra]) });
    const [m] = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
    for (const key of ['actor/pg_loss', 'actor/grad_norm', 'critic/advantages_mean'])
      expect(Number.isFinite(m![key]), key).toBe(true);
    if (extra.includes('algo.kl.inReward=true')) expect(m!['actor/kl_coef']).toBe(0.01);
    if (extra.includes('trainer.ppoEpochs=2'))
      expect(m!['train/num_mini_batches']).toBe(2 * Math.ceil(m!['train/batch_size']! / 4));
  });

  it('gives identical metrics for identical seeds, and different ones for another seed', async () => {
    const a = await train({ config: microConfig(model, runDir()) });
    const b = await train({ config: microConfig(model, runDir()) });
    const c = await train({ config: microConfig(model, runDir(), ['seed.train=777', 'trainer.steps=1']) });
    const ma = deterministic(readMetricsFile(join(a.runDir, 'metrics.jsonl')));
    expect(deterministic(readMetricsFile(join(b.runDir, 'metrics.jsonl')))).toEqual(ma);
    expect(deterministic(readMetricsFile(join(c.runDir, 'metrics.jsonl')))[0]).not.toEqual(ma[0]);
  });

  it('accumulation invariance: mini-batch 8 as 8 micro-batches of 1 equals one micro-batch of 8', async () => {
    const run = async (micro: number) => {
      const r = await train({
        config: microConfig(model, runDir(), [
          'trainer.steps=1',
          'trainer.miniBatchSize=8',
          `trainer.microBatchSize=${micro}`,
        ]),
      });
      return {
        w: await weights(join(r.runDir, 'checkpoints', 'step-1')),
        m: readMetricsFile(join(r.runDir, 'metrics.jsonl'))[0]!,
      };
    };
    const one = await run(1);
    const eight = await run(8);
    // Adam's first step moves a weight by about lr * sign(grad) whatever the gradient's scale, so the gradient norms
    // check the accumulation's scaling; the weights then agree to a small fraction of lr (1e-3): float rounding
    // in near-zero gradients, which Adam divides by their own magnitude, is all that may differ.
    expect(eight.m['actor/grad_norm']! / one.m['actor/grad_norm']!).toBeCloseTo(1, 5);
    expect(eight.m['critic/grad_norm']! / one.m['critic/grad_norm']!).toBeCloseTo(1, 5);
    expect(maxDiff(one.w, eight.w)).toBeLessThan(5e-5);
    expect(eight.m['actor/pg_loss']).toBeCloseTo(one.m['actor/pg_loss']!, 6);
    expect(eight.m['critic/vf_loss']).toBeCloseTo(one.m['critic/vf_loss']!, 6);
  });

  it('resumes exactly: 2 steps + resume to 4 gives the metrics and weights of an uninterrupted 4-step run', async () => {
    const extra = [
      'trainer.steps=4',
      'trainer.valEvery=2',
      'trainer.valBeforeTrain=true',
      'trainer.shuffle=true',
      'trainer.lrSchedule=warmup_cosine',
      'trainer.warmupSteps=1',
    ];
    const full = await train({ config: microConfig(model, runDir(), extra) });
    const dir = runDir();
    const first = await train({ config: microConfig(model, dir, extra), stopAfter: 2 });
    expect(first.lastStep).toBe(2);
    const second = await train({ resume: dir });
    expect(second.startStep).toBe(2);
    expect(second.lastStep).toBe(4);
    const mf = deterministic(readMetricsFile(join(full.runDir, 'metrics.jsonl')));
    const mr = deterministic(readMetricsFile(join(dir, 'metrics.jsonl')));
    expect(mr.map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    expect(mr).toEqual(mf);
    expect(mr[4]!['val/SimpleSokoban/success']).toBeDefined();
    expect(
      maxDiff(
        await weights(join(dir, 'checkpoints', 'step-4')),
        await weights(join(full.runDir, 'checkpoints', 'step-4')),
      ),
    ).toBe(0);
    expect(readFileSync(join(dir, 'rollouts', 'step-3.jsonl'), 'utf8')).toBe(
      readFileSync(join(full.runDir, 'rollouts', 'step-3.jsonl'), 'utf8'),
    );
  });

  it('LoRA with a KL loss to the frozen base, a shared critic and collapse diagnostics: only adapters and value head train, and resume stays exact', async () => {
    const extra = [
      'model.lora.rank=4',
      'model.lora.alpha=8',
      'model.critic.mode=shared',
      'algo.kl.useKlLoss=true',
      'algo.kl.coef=0.05',
      'algo.kl.estimator=k3',
      'trainer.collapse.every=1',
      'trainer.collapse.numSamples=4',
    ];
    const full = await train({ config: microConfig(model, runDir(), extra) });
    const dir = runDir();
    await train({ config: microConfig(model, dir, extra), stopAfter: 1 });
    await train({ resume: dir });
    const m = readMetricsFile(join(dir, 'metrics.jsonl'));
    expect(deterministic(m)).toEqual(deterministic(readMetricsFile(join(full.runDir, 'metrics.jsonl'))));
    for (const key of [
      'actor/kl_loss',
      'actor/kl_coef',
      'critic/vf_loss',
      'collapse/mi_estimate',
      'collapse/retrieval_accuracy',
      'collapse_trajectory_sample/mi_estimate',
    ]) {
      expect(Number.isFinite(m[1]![key]), key).toBe(true);
    }
    expect(m[1]!['collapse/mi_upper_bound']).toBeCloseTo(Math.log(2), 6); // two groups = two distinct first prompts
    const config = microConfig(model, runDir(), extra);
    const base = await openModels(config);
    // the checkpoint written after --resume holds adapters naming the base, not a copy of the frozen base
    expect(readdirSync(join(dir, 'checkpoints', 'step-2')).filter((f) => f.startsWith('model'))).toEqual([]);
    const trained = await openModels(config, join(dir, 'checkpoints', 'step-2'));
    expect(trained.engine.parameters('policy').every(([name]) => name.includes('lora_'))).toBe(true);
    const frozen = (e: typeof base.engine) => e.policy.exportWeights();
    const [wa, wb] = [frozen(base.engine), frozen(trained.engine)];
    for (const [name, w] of wa) expect(wb.get(name)!.data, name).toEqual(w.data); // base weights untouched
    base.engine.dispose();
    trained.engine.dispose();
  });

  it('logs timing_s/step once per step (not averaged with a second timing) and checkpoints the early-warning series', async () => {
    const log = vi.spyOn(MetricLogger.prototype, 'log');
    try {
      const r = await train({ config: microConfig(model, runDir(), ['trainer.steps=2']) });
      const timings = log.mock.calls.filter(([values]) => values['timing_s/step'] !== undefined);
      expect(timings).toHaveLength(2);
      const m = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
      expect(m.map((x) => x['timing_s/step'])).toEqual(timings.map(([values]) => values['timing_s/step'])); // one value a step, not a mean
      const w = (
        readCheckpoint(join(r.runDir, 'checkpoints', 'step-2')).trainer as { earlyWarning: { rewardStd: number[] } }
      ).earlyWarning;
      expect(w.rewardStd).toEqual(m.map((x) => x['rollout/in_group_reward_std']));
    } finally {
      log.mockRestore();
    }
  });

  it('skips a step whose batch the filter emptied, and stops early after emptyBatchPatience of them', async () => {
    // A random micro model never answers in format: every group has reward std 0, which includeZero=false drops.
    const r = await train({
      config: microConfig(model, runDir(), [
        'algo.filter.includeZero=false',
        'trainer.earlyStop.emptyBatchPatience=2',
        'trainer.steps=5',
      ]),
    });
    expect(r.lastStep).toBe(2);
    expect(r.earlyStop?.key).toBe('early_stopped/empty_filtered_steps');
    const m = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
    expect(m.map((x) => x['rollout/empty_after_filter'])).toEqual([1, 1]);
    expect(m[1]!['early_stopped/empty_filtered_steps']).toBe(1);
    expect(m[0]!['actor/pg_loss']).toBeUndefined();
  });
});

describe('train errors', () => {
  it('names a missing model directory', async () => {
    const config = loadConfig({
      overrides: [`model.path=${join(root, 'no-such-model')}`, `logging.runDir=${runDir()}`],
    });
    await expect(train({ config })).rejects.toThrow(ConfigError);
    await expect(train({ config })).rejects.toThrow(/`model\.path` = .*no-such-model.*no such directory/);
  });

  it('rejects a run directory without checkpoints', async () => {
    await expect(train({ resume: join(root, 'no-such-run') })).rejects.toThrow(CheckpointError);
  });

  it('names an unknown key with the nearest valid one', () => {
    expect(() => microConfig(model, runDir(), ['trainer.stepz=3'])).toThrow(/trainer\.steps/);
  });
});
