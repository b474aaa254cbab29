// The W&B sink driving the real `@wandb/sdk` against a local stand-in of the W&B HTTP API (wandb-standin.ts), the way
// the SDK talks to api.wandb.ai when WANDB_BASE_URL points elsewhere.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, TrackingError } from '../util/index.js';
import { MetricLogger, type MetricRecord } from './logger.js';
import { runPaths } from './run-dir.js';
import { openRunSinks } from './run-sinks.js';
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
    const sink = await WandbSink.open({
      project: 'proj',
      entity: null,
      name: 'Bandit__grpo__1',
      config: { algo: { advEstimator: 'grpo' } },
    });
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
    expect(standIn.seen.upserts[0]).toMatchObject({
      project: 'proj',
      entity: 'tester',
      displayName: 'Bandit__grpo__1',
    });
    expect(JSON.parse(standIn.seen.upserts[0]!.config as string)).toEqual({ algo: { advEstimator: 'grpo' } });
    expect(
      standIn.seen.history.map((h) => ({ step: h._step, success: h['train/success'], loss: h['actor/pg_loss'] })),
    ).toEqual([
      { step: 2, success: 0.5, loss: 2 },
      { step: 3, success: 1, loss: undefined },
    ]);
    expect(standIn.seen.history.every((h) => !('time' in h) && !('step' in h))).toBe(true);
    expect(standIn.seen.finished).toEqual([{ complete: true, exitcode: 0 }]);
    expect(
      standIn.seen.paths.filter((p) => p.endsWith('/file_stream')).every((p) => p.startsWith('/files/tester/proj/')),
    ).toBe(true);
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
    const err = await WandbSink.open({
      project: 'p',
      entity: null,
      name: 'r',
      config: {},
      specifier: '@wandb/not-installed',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrackingError);
    expect((err as Error).message).toMatch(
      /optional package `@wandb\/not-installed` is not installed; install it .*npm install @wandb\/not-installed/,
    );
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(ok: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !ok() && Date.now() < end;) await sleep(100);
}

/** Everything printed through console.* and process.stdout/stderr while `fn` runs. */
async function printedDuring(fn: () => Promise<void>): Promise<string> {
  const out: string[] = [];
  const keep = (...a: unknown[]) => void out.push(a.map((x) => (x instanceof Error ? x.stack : String(x))).join(' '));
  vi.spyOn(console, 'error').mockImplementation(keep);
  vi.spyOn(console, 'log').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  try {
    await fn();
  } finally {
    vi.restoreAllMocks();
  }
  return out.join('\n');
}

describe('item 11: W&B failures are said once and never take the run down', () => {
  it('item 11: a server lost after step 2 of 6 is said in one line (sink, step, what is lost), no raw stacks, the other sinks get every step', async () => {
    const own = await startWandbStandIn();
    const restoreEnv = wandbEnv({ WANDB_BASE_URL: own.url, WANDB_API_KEY: own.key });
    const warned: string[] = [];
    const seen: number[] = [];
    try {
      const printed = await printedDuring(async () => {
        const sink = await WandbSink.open({
          project: 'proj',
          entity: null,
          name: 'lost',
          config: {},
          warn: (line) => warned.push(line),
        });
        const logger = new MetricLogger([{ write: (r: MetricRecord) => void seen.push(r.step) }, sink]);
        for (const step of [1, 2]) {
          logger.log({ 'train/success': step / 10 });
          logger.endStep(step);
        }
        await until(() => own.seen.history.length >= 2, 20_000);
        expect(own.seen.history.map((h) => h._step)).toEqual([1, 2]);
        await own.kill();
        for (const step of [3, 4, 5, 6]) {
          logger.log({ 'train/success': step / 10 });
          logger.endStep(step);
          await sleep(1500); // the SDK posts its rows every 2 s
        }
        await until(() => warned.length > 0, 20_000);
        await logger.close();
      });
      expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(
        new RegExp(
          `^W&B sink: ${own.url.replace(/[.]/g, '\\.')} stopped receiving at step [3-6] \\(.*ECONNREFUSED.*\\); W&B gets no metrics from step [3-6] on .*metrics\\.jsonl keeps every step\\.$`,
        ),
      );
      expect(printed).not.toMatch(/Fatal error|FetchError|\n\s+at /);
    } finally {
      restoreEnv();
    }
  }, 90_000);

  it('item 11: a W&B that cannot be reached at start is named unreachable, not a bad key', async () => {
    const restoreEnv = wandbEnv({
      WANDB_BASE_URL: `http://127.0.0.1:${await freePort()}`,
      WANDB_API_KEY: 'k'.repeat(40),
    });
    try {
      let err: unknown;
      const printed = await printedDuring(async () => {
        err = await WandbSink.open({ project: 'p', entity: null, name: 'r', config: {} }).catch((e: unknown) => e);
      });
      expect(err).toBeInstanceOf(TrackingError);
      expect((err as Error).message).toMatch(
        /^W&B at http:\/\/127\.0\.0\.1:\d+ cannot be reached \(.*ECONNREFUSED.*\); check the network and WANDB_BASE_URL, or set WANDB_MODE=offline/,
      );
      expect((err as Error).message).not.toMatch(/valid key/);
      expect(printed).not.toMatch(/Fatal error|\n\s+at /);
    } finally {
      restoreEnv();
    }
  }, 60_000);

  it('item 11: WANDB_MODE=offline sends nothing and says so; an unknown WANDB_MODE is refused by name', async () => {
    const own = await startWandbStandIn();
    const dir = mkdtempSync(join(tmpdir(), 'ragen-wandb-offline-'));
    const restoreEnv = wandbEnv({ WANDB_BASE_URL: own.url, WANDB_API_KEY: own.key, WANDB_MODE: 'offline' });
    try {
      const opened = await openRunSinks({
        paths: runPaths(dir),
        sinks: ['jsonl', 'wandb'],
        wandb: { project: 'p', entity: null, name: null },
        config: {},
        console: 'none',
        totalSteps: 1,
        startStep: 0,
      });
      opened.consoleLog.close();
      expect(opened.sinks.some((s) => s instanceof WandbSink)).toBe(false);
      expect(opened.notes).toContainEqual(
        expect.stringMatching(/^W&B: WANDB_MODE=offline honoured: nothing is sent to W&B/),
      );
      expect(own.seen.paths).toEqual([]);
      process.env.WANDB_MODE = 'sometimes';
      await expect(
        openRunSinks({
          paths: runPaths(dir),
          sinks: ['jsonl', 'wandb'],
          wandb: { project: 'p', entity: null, name: null },
          config: {},
          console: 'none',
          totalSteps: 1,
          startStep: 0,
        }),
      ).rejects.toThrow(/^WANDB_MODE=sometimes is not a W&B mode; set online, offline or disabled/);
    } finally {
      restoreEnv();
      await own.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
