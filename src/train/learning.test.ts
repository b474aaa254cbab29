// Learning smoke test: a few StarPO steps on Bandit with the shipped model (models/ragen-tiny) must raise the greedy
// validation success (choice of the higher-paying arm) clearly above its start, for PPO and for GRPO. Unlike the
// determinism and resume tests, this one fails when an update goes the wrong way (a negated advantage or gradient).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import '../env/builtins.js';
import { loadConfig } from '../config/index.js';
import { train } from './trainer.js';

const MODEL = join(import.meta.dirname, '../../models/ragen-tiny');
const VAL_SEEDS = 32;

// Greedy validation on 32 fixed seeds is a deterministic function of the weights: an update that carries no signal
// leaves `after` at `before` (or, at worst, scatters the 32 choices like coin flips: >= 24 of 32 has probability
// 0.35%). Measured (shipped model, train seeds 1, 2 and 10000): before 0.50, after 0.91-0.97 for both algorithms;
// with the advantages (step.ts) or the log-prob gradient (update.ts) negated by hand: after 0.09 (PPO) and 0 (GRPO).
// A rise of 8 seeds out of 32 sits well between the two.
const MARGIN = 0.25;

// Sized for CI (~10 s per run on 2 cores): 16 episodes per step (4 seeds x 4 samples), one mini-batch, 6 steps.
// The high-risk arm always pays (hiArmHiscoreProb 1) so that each sample's reward is its success: the test checks
// the trainer's direction, not how it copes with Bandit's payout noise (1 with p 0.25, the preset's setting).
// actorLr 3e-4 (3x the preset) moves the arm preference within 6 steps; 1e-3 broke the answer format on some seeds.
const SMOKE = [
  'env.train=[{tag: Bandit, groups: 4, groupSize: 4}]',
  `env.val=[{tag: Bandit, groups: ${VAL_SEEDS}}]`,
  'env.config={Bandit: {hiArmHiscoreProb: 1}}',
  'generation.val.greedy=true',
  'agent.maxNewTokens=32',
  'trainer.steps=6',
  'trainer.actorLr=3e-4',
  'trainer.miniBatchSize=16',
  'trainer.microBatchSize=16',
  'trainer.valEvery=6',
  'trainer.checkpointEvery=0',
  'trainer.collapse.every=0',
  'logging.console=none',
];

const root = mkdtempSync(join(tmpdir(), 'ragen-learning-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('learning smoke test: Bandit with the shipped model', () => {
  it.each([
    ['PPO (GAE, separate critic)', []],
    ['GRPO', ['algo.advEstimator=grpo', 'algo.lossAgg=seq-mean-token-mean']],
  ])('%s raises greedy validation success by a clear margin within 6 steps', async (name, algo) => {
    const config = loadConfig({ config: 'bandit-ppo', overrides: [`model.path=${MODEL}`, `logging.runDir=${join(root, name.split(' ')[0]!)}`, ...SMOKE, ...algo] });
    const r = await train({ config });
    expect(r.lastStep).toBe(6);
    const row = r.summary.find((s) => s.tag === 'Bandit');
    expect(row?.before, 'validation before training').toBeTypeOf('number');
    expect(row?.after, 'validation after training').toBeTypeOf('number');
    expect(row!.after!, `${name}: Bandit val success ${row!.before} -> ${row!.after}`).toBeGreaterThanOrEqual(row!.before! + MARGIN);
  }, 180_000); // ~10-15 s each alone; the full suite shares 2 cores between test files
});
