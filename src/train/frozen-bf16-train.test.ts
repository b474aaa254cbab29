import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { backendAvailable } from '../tensor/index.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let runs = 0;
const runDir = () => join(root, `run-${++runs}`);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-bf16-train-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.runIf(backendAvailable('native'))('training with a bf16 frozen base (model.frozenDtype=bf16)', () => {
  const lora = [
    'model.backend=native',
    'model.lora.rank=4',
    'model.lora.alpha=8',
    'model.critic.mode=shared',
    'algo.kl.useKlLoss=true',
    'algo.kl.coef=0.05',
  ];

  it('steps, and 1 step + --resume gives the metrics of an uninterrupted 2-step run', async () => {
    const extra = [...lora, 'model.frozenDtype=bf16'];
    const full = await train({ config: microConfig(model, runDir(), extra) });
    const dir = runDir();
    await train({ config: microConfig(model, dir, extra), stopAfter: 1 });
    await train({ resume: dir });
    const m = readMetricsFile(join(dir, 'metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual([1, 2]);
    expect(deterministic(m)).toEqual(deterministic(readMetricsFile(join(full.runDir, 'metrics.jsonl'))));
    for (const key of ['actor/pg_loss', 'actor/kl_loss', 'critic/vf_loss', 'actor/grad_norm'])
      expect(Number.isFinite(m[1]![key]), key).toBe(true);
    // the bf16 base is what ran: the float32 base gives other numbers for the same seeds
    const f32 = await train({ config: microConfig(model, runDir(), lora) });
    const n = readMetricsFile(join(f32.runDir, 'metrics.jsonl'));
    expect(m[0]!['actor/grad_norm']).not.toEqual(n[0]!['actor/grad_norm']);
    expect(Math.abs(m[0]!['actor/grad_norm']! - n[0]!['actor/grad_norm']!)).toBeLessThan(
      0.05 * n[0]!['actor/grad_norm']!,
    );
  });
});
