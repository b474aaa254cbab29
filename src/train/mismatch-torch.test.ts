// mismatch/* on the torch engine: sampling from the bf16 rollout copy under CPU bf16 autocast while the trainer
// recomputes log π_old with the float32 policy (under the same autocast) leaves a real, measured gap.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { loadConfig } from '../config/index.js';
import { torchPythonForTests } from '../engine/torch-testing.js';
import { readMetricsFile } from '../metrics/index.js';
import { LEARNING_SMOKE } from './testing.js';
import { train } from './trainer.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-mismatch-torch-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!python)('mismatch/* on the torch engine', () => {
  it('is > 0 when rollouts sample from the bf16 copy and the trainer recomputes with the float32 policy', async () => {
    const config = loadConfig({
      config: 'bandit-ppo',
      overrides: [
        `model.path=${LEARNING_SMOKE.MODEL}`,
        'model.engine=torch',
        'model.torch.device=cpu',
        'model.torch.precision=bfloat16',
        'model.torch.rolloutCopy=bf16',
        `logging.runDir=${join(root, 'bf16')}`,
        'logging.console=none',
        'env.train=[{tag: Bandit, groups: 2, groupSize: 4}]',
        'env.val=[{tag: Bandit, groups: 1}]',
        'agent.maxNewTokens=16',
        'trainer.steps=1',
        'trainer.miniBatchSize=8',
        'trainer.microBatchSize=8',
        'trainer.valEvery=0',
        'trainer.valBeforeTrain=false',
        'trainer.checkpointEvery=0',
        'trainer.collapse.every=0',
      ],
    });
    const r = await train({ config });
    const [m] = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
    expect(m!['mismatch/log_ratio_abs_max']).toBeGreaterThan(0);
    expect(m!['mismatch/log_ratio_abs_mean']).toBeGreaterThan(0);
    expect(m!['mismatch/k3_kl']).toBeGreaterThan(0);
    // The batch's one source carries all of it.
    expect(m!['mismatch/Bandit/log_ratio_abs_max']).toBe(m!['mismatch/log_ratio_abs_max']);
    expect(m!['mismatch/Bandit/k3_kl']).toBeCloseTo(m!['mismatch/k3_kl']!, 12);
  });
});
