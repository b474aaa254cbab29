// The W&B sink driving the real `@wandb/sdk` against a local stand-in of the W&B HTTP API (wandb-standin.ts), the way
// the SDK talks to api.wandb.ai when WANDB_BASE_URL points elsewhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrackingError } from '../util/index.js';
import { MetricLogger } from './logger.js';
import { WandbSink } from './wandb-sink.js';
import { startWandbStandIn, wandbEnv, type WandbStandIn } from './wandb-standin.js';

let standIn: WandbStandIn;
let restore: () => void;

beforeAll(async () => {
  standIn = await startWandbStandIn();
  restore = wandbEnv({ WANDB_BASE_URL: standIn.url });
});

afterAll(async () => {
  restore();
  await standIn.close();
});

describe('W&B sink (the real @wandb/sdk against a local stand-in of its API)', () => {
  it('creates the run with the config, logs one history row per record at its step, and finishes', async () => {
    standIn.reset();
    process.env.WANDB_API_KEY = standIn.key;
    const sink = await WandbSink.open({ project: 'proj', entity: null, name: 'Bandit__grpo__1', config: { algo: { advEstimator: 'grpo' } } });
    expect(sink.url).toMatch(/\/tester\/proj\/runs\//);
    const logger = new MetricLogger([sink], { every: 2, now: () => 0 });
    logger.log({ 'train/success': 0.25 });
    logger.endStep(1);
    logger.log({ 'train/success': 0.75, 'actor/pg_loss': 2 });
    logger.endStep(2);
    logger.log({ 'train/success': 1 });
    logger.flush(3);
    await logger.close();
    expect(standIn.seen.upserts).toHaveLength(1);
    expect(standIn.seen.upserts[0]).toMatchObject({ project: 'proj', entity: 'tester', displayName: 'Bandit__grpo__1' });
    expect(JSON.parse(standIn.seen.upserts[0]!.config as string)).toEqual({ algo: { advEstimator: 'grpo' } });
    expect(standIn.seen.history.map((h) => ({ step: h._step, success: h['train/success'], loss: h['actor/pg_loss'] }))).toEqual([
      { step: 2, success: 0.5, loss: 2 },
      { step: 3, success: 1, loss: undefined },
    ]);
    expect(standIn.seen.history.every((h) => !('time' in h) && !('step' in h))).toBe(true);
    expect(standIn.seen.finished).toEqual([{ complete: true, exitcode: 0 }]);
    expect(standIn.seen.paths.filter((p) => p.endsWith('/file_stream')).every((p) => p.startsWith('/files/tester/proj/'))).toBe(true);
  });

  it('turns a refused key into a TrackingError that names the server and WANDB_API_KEY', async () => {
    standIn.reset();
    process.env.WANDB_API_KEY = 'x'.repeat(40);
    const err = await WandbSink.open({ project: 'proj', entity: null, name: 'r', config: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrackingError);
    expect((err as Error).message).toContain(process.env.WANDB_BASE_URL!);
    expect((err as Error).message).toMatch(/401.*WANDB_API_KEY/);
    expect(standIn.seen.upserts).toEqual([]);
  });

  it('names the package when it is not installed', async () => {
    const err = await WandbSink.open({ project: 'p', entity: null, name: 'r', config: {}, specifier: '@wandb/not-installed' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrackingError);
    expect((err as Error).message).toMatch(/optional package `@wandb\/not-installed` is not installed; install it .*npm install @wandb\/not-installed/);
  });
});
