// Tracking in a real (micro) training run: `logging.sinks` adds TensorBoard event files beside metrics.jsonl, and
// the run's console output lands in <run>/console.log. The sinks' formats are tested in src/metrics.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { startWandbStandIn, wandbEnv } from '../metrics/wandb-standin.js';
import { CheckpointError, ConfigError, TrackingError } from '../util/index.js';
import { runCli } from '../cli/testing.js';
import { createRun } from './run-setup.js';
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
    const r = await train({
      config: microConfig(model, runDir, ['logging.sinks=[jsonl, tensorboard]', 'logging.console=plain']),
    });
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

  it('logs every record to W&B (a local stand-in of its API), and stops before the first step when W&B refuses the key', async () => {
    const standIn = await startWandbStandIn();
    const restore = wandbEnv({ WANDB_BASE_URL: standIn.url, WANDB_API_KEY: standIn.key });
    try {
      const runDir = join(root, 'run-wandb');
      await train({
        config: microConfig(model, runDir, [
          'logging.sinks=[jsonl, wandb]',
          'logging.wandb.project=micro',
          'logging.console=plain',
        ]),
      });
      const metrics = readMetricsFile(join(runDir, 'metrics.jsonl'));
      expect(metrics.map((m) => m.step)).toEqual([1, 2]);
      expect(standIn.seen.history.map((h) => h['_step'])).toEqual(metrics.map((m) => m.step));
      expect(standIn.seen.history.map((h) => h['actor/pg_loss'])).toEqual(metrics.map((m) => m['actor/pg_loss']));
      expect(standIn.seen.upserts).toHaveLength(1);
      expect(standIn.seen.upserts[0]).toMatchObject({ project: 'micro', displayName: 'run-wandb' });
      expect(standIn.seen.finished).toEqual([{ complete: true, exitcode: 0 }]);
      expect(readFileSync(join(runDir, 'console.log'), 'utf8')).toMatch(
        /^W&B: http:\/\/127\.0\.0\.1:\d+\/tester\/micro\/runs\/\S+$/m,
      );

      process.env.WANDB_API_KEY = 'x'.repeat(40);
      const write = process.stdout.write;
      const refused = join(root, 'run-wandb-refused');
      const err = await train({ config: microConfig(model, refused, ['logging.sinks=[jsonl, wandb]']) }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TrackingError);
      expect((err as Error).message).toMatch(/WANDB_API_KEY/);
      expect(process.stdout.write).toBe(write); // the console log let go of the streams
      expect(existsSync(join(refused, 'metrics.jsonl'))).toBe(false);
      const [said, note] = (err as Error).message.split(/ (?=`[^`]+` keeps only its console\.log)/);
      expect(note).toBe(`\`${refused}\` keeps only its console.log, so the same command can run again.`);
      expect(readFileSync(join(refused, 'console.log'), 'utf8')).toBe(`TrackingError: ${said}\n`);
    } finally {
      restore();
      await standIn.close();
    }
  });

  it('item 13: a W&B start failure with an explicit logging.runDir leaves nothing that blocks the same command once W&B answers', async () => {
    const standIn = await startWandbStandIn();
    const restore = wandbEnv({ WANDB_BASE_URL: standIn.url, WANDB_API_KEY: 'x'.repeat(40) });
    try {
      const runDir = join(root, 'run-retry');
      const config = () => microConfig(model, runDir, ['logging.sinks=[jsonl, wandb]', 'trainer.steps=1']);
      const err = await train({ config: config() }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TrackingError);
      expect((err as Error).message).toMatch(/so the same command can run again\.$/);
      process.env.WANDB_API_KEY = standIn.key; // the cause is gone
      const r = await train({ config: config() });
      expect(r.runDir).toBe(runDir);
      expect(readMetricsFile(join(runDir, 'metrics.jsonl')).map((m) => m.step)).toContain(1);
      expect(readFileSync(join(runDir, 'console.log'), 'utf8')).toMatch(/^TrackingError: W&B at .* refused the run/m); // the failure's record stays
    } finally {
      restore();
      await standIn.close();
    }
  }, 180_000);

  it('item 13: --resume of a run that never reached a checkpoint advises a command that works', async () => {
    const runDir = join(root, 'run-no-checkpoint');
    createRun(microConfig(model, runDir, ['trainer.steps=1'])); // what a run stopped during its first step leaves
    const err = await train({ resume: runDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointError);
    const advised = /`ragen train (--config \S+ logging\.runDir=\S+)`/.exec((err as Error).message);
    expect(advised, (err as Error).message).not.toBeNull();
    const r = await runCli('train', ...advised![1]!.split(' '));
    expect(r.code, r.err).toBe(0);
    expect(existsSync(join(`${runDir}-2`, 'checkpoints'))).toBe(true);
  }, 180_000);

  it('refuses sinks without jsonl, naming the key and what reads metrics.jsonl', () => {
    expect(() => microConfig(model, join(root, 'x'), ['logging.sinks=[tensorboard]'])).toThrow(ConfigError);
    expect(() => microConfig(model, join(root, 'x'), ['logging.sinks=[tensorboard]'])).toThrow(
      /logging\.sinks.*must include `jsonl`/,
    );
    expect(() => microConfig(model, join(root, 'x'), ['logging.sinks=[jsonl, mlflow]'])).toThrow(/logging\.sinks/);
  });
});
