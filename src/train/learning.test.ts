// Learning smoke test: a few StarPO steps on Bandit with the shipped model (models/ragen-tiny) must raise the greedy
// validation success (choice of the higher-paying arm) clearly above its start, for PPO and for GRPO. Unlike the
// determinism and resume tests, this one fails when an update goes the wrong way (a negated advantage or gradient).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { loadConfig } from '../config/index.js';
import { LEARNING_SMOKE } from './testing.js';
import { train } from './trainer.js';

const { MODEL, MARGIN, SMOKE } = LEARNING_SMOKE;

const root = mkdtempSync(join(tmpdir(), 'ragen-learning-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('learning smoke test: Bandit with the shipped model', () => {
  it.each([
    ['PPO (GAE, separate critic)', []],
    ['GRPO', ['algo.advEstimator=grpo', 'algo.lossAgg=seq-mean-token-mean']],
  ])(
    '%s raises greedy validation success by a clear margin within 6 steps',
    async (name, algo) => {
      const config = loadConfig({
        config: 'bandit-ppo',
        overrides: [`model.path=${MODEL}`, `logging.runDir=${join(root, name.split(' ')[0]!)}`, ...SMOKE, ...algo],
      });
      const r = await train({ config });
      expect(r.lastStep).toBe(6);
      const row = r.summary.find((s) => s.tag === 'Bandit');
      expect(row?.before, 'validation before training').toBeTypeOf('number');
      expect(row?.after, 'validation after training').toBeTypeOf('number');
      expect(row!.after!, `${name}: Bandit val success ${row!.before} -> ${row!.after}`).toBeGreaterThanOrEqual(
        row!.before! + MARGIN,
      );
    },
    180_000,
  ); // ~10-15 s each alone; the full suite shares 2 cores between test files
});
