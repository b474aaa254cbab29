// The W&B sink driving the real `@wandb/sdk` against a local stand-in of the W&B HTTP API (GraphQL `viewer` and
// `upsertBucket`, then the run's file_stream), the way the SDK talks to api.wandb.ai when WANDB_BASE_URL points here.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrackingError } from '../util/index.js';
import { MetricLogger } from './logger.js';
import { WandbSink } from './wandb-sink.js';

const KEY = 'k'.repeat(40);

interface Seen {
  upserts: Record<string, unknown>[];
  history: Record<string, number>[];
  finished: { complete: boolean; exitcode: number }[];
  paths: string[];
}

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => resolve(text));
  });

let server: Server;
let seen: Seen;
const saved = { key: process.env.WANDB_API_KEY, url: process.env.WANDB_BASE_URL };

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const json = (status: number, data: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(data));
    };
    if (req.headers.authorization !== `Basic ${Buffer.from(`api:${KEY}`).toString('base64')}`) return json(401, { errors: [{ message: 'bad key' }] });
    const msg = JSON.parse(await body(req));
    seen.paths.push(req.url!);
    if (req.url === '/graphql' && /viewer/.test(msg.query)) return json(200, { data: { viewer: { id: 'v', entity: 'tester', flags: '', teams: { edges: [] } } } });
    if (req.url === '/graphql' && /upsertBucket/.test(msg.query)) {
      seen.upserts.push(msg.variables);
      const v = msg.variables;
      return json(200, { data: { upsertBucket: { inserted: true, bucket: { id: 'b', name: v.name, displayName: v.displayName, description: null, config: v.config, sweepName: null, project: { id: 'p', name: v.project, entity: { id: 'e', name: v.entity } } } } } });
    }
    if (req.url?.endsWith('/file_stream')) {
      for (const line of msg.files?.['wandb-history.jsonl']?.content ?? []) seen.history.push(JSON.parse(line));
      if (msg.complete !== undefined) seen.finished.push(msg);
      return json(200, {});
    }
    json(404, {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.env.WANDB_BASE_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
  for (const [name, v] of [['WANDB_API_KEY', saved.key], ['WANDB_BASE_URL', saved.url]] as const) {
    if (v === undefined) delete process.env[name];
    else process.env[name] = v;
  }
});

describe('W&B sink (the real @wandb/sdk against a local stand-in of its API)', () => {
  it('creates the run with the config, logs one history row per record at its step, and finishes', async () => {
    seen = { upserts: [], history: [], finished: [], paths: [] };
    process.env.WANDB_API_KEY = KEY;
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
    expect(seen.upserts).toHaveLength(1);
    expect(seen.upserts[0]).toMatchObject({ project: 'proj', entity: 'tester', displayName: 'Bandit__grpo__1' });
    expect(JSON.parse(seen.upserts[0]!.config as string)).toEqual({ algo: { advEstimator: 'grpo' } });
    expect(seen.history.map((h) => ({ step: h._step, success: h['train/success'], loss: h['actor/pg_loss'] }))).toEqual([
      { step: 2, success: 0.5, loss: 2 },
      { step: 3, success: 1, loss: undefined },
    ]);
    expect(seen.history.every((h) => !('time' in h) && !('step' in h))).toBe(true);
    expect(seen.finished).toEqual([{ complete: true, exitcode: 0 }]);
    expect(seen.paths.filter((p) => p.endsWith('/file_stream')).every((p) => p.startsWith('/files/tester/proj/'))).toBe(true);
  });

  it('turns a refused key into a TrackingError that names the server and WANDB_API_KEY', async () => {
    seen = { upserts: [], history: [], finished: [], paths: [] };
    process.env.WANDB_API_KEY = 'x'.repeat(40);
    const err = await WandbSink.open({ project: 'proj', entity: null, name: 'r', config: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrackingError);
    expect((err as Error).message).toContain(process.env.WANDB_BASE_URL!);
    expect((err as Error).message).toMatch(/401.*WANDB_API_KEY/);
    expect(seen.upserts).toEqual([]);
  });

  it('names the package when it is not installed', async () => {
    const err = await WandbSink.open({ project: 'p', entity: null, name: 'r', config: {}, specifier: '@wandb/not-installed' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrackingError);
    expect((err as Error).message).toMatch(/optional package `@wandb\/not-installed` is not installed; install it .*npm install @wandb\/not-installed/);
  });
});
