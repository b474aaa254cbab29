// A training process killed with SIGKILL mid-run loses at most the step it was in: `train({resume})` continues
// from the newest complete checkpoint and writes the metrics and weights of a run that was never interrupted.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../metrics/index.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-crash-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const OVERRIDES = ['trainer.steps=6', 'trainer.checkpointEvery=1', 'trainer.keepCheckpoints=2', 'trainer.valEvery=3'];

/**
 * Start the run in a child process; SIGKILL it as soon as `checkpoints/step-<killAfter>` exists (the next step is under
 * way).
 */
async function trainAndKill(runDir: string, killAfter: number): Promise<{ signal: NodeJS.Signals | null }> {
  const script = `
    const { microConfig } = await import(${JSON.stringify(join(import.meta.dirname, 'testing.ts'))});
    const { train } = await import(${JSON.stringify(join(import.meta.dirname, 'trainer.ts'))});
    await train({ config: microConfig(${JSON.stringify(model)}, ${JSON.stringify(runDir)}, ${JSON.stringify(OVERRIDES)}) });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const marker = join(runDir, 'checkpoints', `step-${killAfter}`);
  const timer = setInterval(() => {
    if (existsSync(marker)) child.kill('SIGKILL');
  }, 5);
  try {
    return await new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code, signal) =>
        signal === 'SIGKILL'
          ? resolve({ signal })
          : reject(new Error(`the training child exited (code ${code}) before it was killed:\n${stderr}`)),
      );
    });
  } finally {
    clearInterval(timer);
  }
}

describe('a run killed with SIGKILL', () => {
  it('resumes from its newest complete checkpoint and ends as an uninterrupted run', { timeout: 120_000 }, async () => {
    const full = await train({ config: microConfig(model, join(root, 'full'), OVERRIDES) });
    const dir = join(root, 'killed');
    expect((await trainAndKill(dir, 3)).signal).toBe('SIGKILL');
    const complete = readdirSync(join(dir, 'checkpoints'))
      .filter((n) => /^step-\d+$/.test(n))
      .map((n) => Number(n.slice(5)));
    expect(Math.max(...complete)).toBeGreaterThanOrEqual(3); // at most the step in flight (4) was lost

    const resumed = await train({ resume: dir });
    expect(resumed.startStep).toBe(Math.max(...complete));
    expect(resumed.lastStep).toBe(6);
    expect(deterministic(readMetricsFile(join(dir, 'metrics.jsonl')))).toEqual(
      deterministic(readMetricsFile(join(full.runDir, 'metrics.jsonl'))),
    );
    const rollouts = readdirSync(join(dir, 'rollouts')).sort();
    expect(rollouts).toEqual(readdirSync(join(full.runDir, 'rollouts')).sort());
    const weights = (run: string) => readFileSync(join(run, 'checkpoints', 'step-6', 'model.safetensors'));
    expect(weights(dir).equals(weights(full.runDir))).toBe(true);
  });
});
