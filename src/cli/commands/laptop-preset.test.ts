// `ragen train --config sokoban-ppo-qwen-laptop` on a `ragen model init` Qwen2.5-shaped directory (full vocabulary,
// tiny trunk) with the preset's own engine settings (local, LoRA on a bf16 frozen base, shared critic, reference =
// adapters off, layers recomputed in backward), shrunk to seconds: one step, `--resume` for a second, equal to two
// straight steps. The 0.5B measurement is src/bench/scripts/laptop-step.ts (docs/benchmarks.md, "Laptop").
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../../metrics/index.js';
import { backendAvailable } from '../../tensor/index.js';
import { deterministic } from '../../train/testing.js';
import { runCli } from '../testing.js';
import { initModelDir } from './model-init.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-laptop-'));
  model = join(root, 'qwen2.5-tiny');
  await initModelDir(model, 'qwen2.5-tiny', { seed: 7 });
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const shrunk = (runDir: string) => [
  '--config',
  'sokoban-ppo-qwen-laptop',
  `model.path=${model}`,
  `logging.runDir=${runDir}`,
  'env.train=[{tag: CoordSokoban, groups: 2, groupSize: 2}]',
  'agent.maxTurns=2',
  'agent.maxNewTokens=6',
  'trainer.miniBatchSize=4',
  'trainer.microBatchSize=2',
  'trainer.valBeforeTrain=false',
  'trainer.valEvery=0',
  'trainer.checkpointEvery=1',
  'trainer.collapse.every=0',
];

describe.runIf(backendAvailable('native'))('the laptop preset on a model init Qwen2.5-shaped directory', () => {
  it('steps once, resumes for a second, and equals two straight steps', { timeout: 600_000 }, async () => {
    const straight = join(root, 'straight');
    const r0 = await runCli('train', ...shrunk(straight), '--steps', '2');
    expect(r0.code, r0.err).toBe(0);
    const split = join(root, 'split');
    const r1 = await runCli('train', ...shrunk(split), '--steps', '2', '--stop-after', '1');
    expect(r1.code, r1.err).toBe(0);
    const r2 = await runCli('train', '--resume', split);
    expect(r2.code, r2.err).toBe(0);
    const a = deterministic(readMetricsFile(join(split, 'metrics.jsonl')));
    const b = deterministic(readMetricsFile(join(straight, 'metrics.jsonl')));
    expect(a.map((r) => r['step'])).toEqual([1, 2]);
    expect(a).toEqual(b);
    // the second step trained on what the first changed: the policy moved (a KL to the adapters-off reference)
    expect(Object.keys(a[1]!)).toContain('actor/pg_loss');
    expect(Object.keys(a[1]!).some((k) => k.includes('kl'))).toBe(true);
  });
});
