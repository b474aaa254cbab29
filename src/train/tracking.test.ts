// Tracking in a real (micro) training run: `logging.sinks` adds TensorBoard event files beside metrics.jsonl, and
// the run's console output lands in <run>/console.log. The sinks' formats are tested in src/metrics.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../env/builtins.js';
import { ConfigError } from '../util/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-tracking-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('tracking in a training run', () => {
  it('writes TensorBoard events and a console log of what the run printed', async () => {
    const runDir = join(root, 'run-tb');
    const r = await train({ config: microConfig(model, runDir, ['logging.sinks=[jsonl, tensorboard]', 'logging.console=plain']) });
    expect(existsSync(join(runDir, 'metrics.jsonl'))).toBe(true);
    const events = readdirSync(join(runDir, 'tensorboard'));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^events\.out\.tfevents\.\d{10}\./);
    const log = readFileSync(join(runDir, 'console.log'), 'utf8');
    expect(log).toContain(`run: ${r.runDir}\n`);
    expect(log).toContain(`TensorBoard: tensorboard --logdir ${join(runDir, 'tensorboard')}\n`);
    expect(log).toMatch(/^step 1\/2 \| reward /m);
    expect(log).toMatch(/^step 2\/2 \| reward /m);
    expect(log).toContain(`Validation success:\n${r.summaryText}\n`);
    expect(log).not.toMatch(/\x1b\[/);
  });

  it('writes no TensorBoard folder unless asked, and the console log even with the console off', async () => {
    const runDir = join(root, 'run-plain');
    await train({ config: microConfig(model, runDir, ['trainer.steps=1']) });
    expect(existsSync(join(runDir, 'tensorboard'))).toBe(false);
    expect(statSync(join(runDir, 'console.log')).size).toBeGreaterThan(0); // the summary table at least
  });

  it('refuses sinks without jsonl, naming the key and what reads metrics.jsonl', () => {
    expect(() => microConfig(model, join(root, 'x'), ['logging.sinks=[tensorboard]'])).toThrow(ConfigError);
    expect(() => microConfig(model, join(root, 'x'), ['logging.sinks=[tensorboard]'])).toThrow(/logging\.sinks.*must include `jsonl`/);
    expect(() => microConfig(model, join(root, 'x'), ['logging.sinks=[jsonl, mlflow]'])).toThrow(/logging\.sinks/);
  });
});
