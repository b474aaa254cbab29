// The dashboard server over hand-written run directories: summaries from known metrics, bad files reported as problems
// (truncated line, unknown metric, missing config), eval pass@k, and hostile request paths refused with the server
// alive.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonl, type RunDetail, type RunSummary } from '../metrics/index.js';
import { evalSummary, startDashboard, type Dashboard } from './index.js';
import type { EpisodeRecord } from '../agent/index.js';

/** GET `path` exactly as written (no URL normalisation), returning status and parsed body. */
function get(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: 'GET', headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text },
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const line = (o: object) => `${JSON.stringify(o)}\n`;
const episode = (env: string, seed: number, group: number, success: boolean): EpisodeRecord =>
  ({
    custom_id: `${env}-${seed}-${group}`,
    step: null,
    env,
    seed,
    group,
    member: 0,
    success,
    total_reward: success ? 1 : 0,
    score: success ? 1 : 0,
    end_reason: 'terminated',
    num_actions: 1,
    context_truncations: 0,
    n_tokens: 3,
    kept: null,
    turns: [],
    messages: [],
  }) as EpisodeRecord;

let root: string;
let dash: Dashboard;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-dash-'));
  // A finished run: val 0.25 before, 0.75 after, 2 of 2 steps.
  const good = join(root, 'good');
  mkdirSync(join(good, 'rollouts'), { recursive: true });
  mkdirSync(join(good, 'eval'), { recursive: true });
  writeFileSync(
    join(good, 'config.yaml'),
    'name: null\nseed: {train: 7}\nenv: {train: [{tag: Bandit}]}\nalgo: {advEstimator: grpo, filter: {strategy: top_p, value: 0.9}}\ntrainer: {steps: 2}\n',
  );
  writeFileSync(
    join(good, 'metrics.jsonl'),
    line({ step: 0, 'val/success': 0.25 }) +
      line({ step: 1, 'train/success': 0.5 }) +
      line({ step: 2, 'train/success': 1, 'val/success': 0.75 }),
  );
  writeFileSync(
    join(good, 'eval', 'val.jsonl'),
    [
      episode('Bandit', 1, 0, true),
      episode('Bandit', 1, 0, false),
      episode('Bandit', 2, 1, false),
      episode('Bandit', 2, 1, false),
    ]
      .map(line)
      .join(''),
  );
  writeFileSync(
    join(good, 'rollouts', 'step-1.jsonl'),
    line(episode('Bandit', 1, 0, true)) + '{"env": 3}\n' + '{"custom_id": "cut',
  );
  // A crashed run: no config.yaml, an unknown metric, a truncated last line.
  const bad = join(root, 'bad');
  mkdirSync(bad);
  writeFileSync(
    join(bad, 'metrics.jsonl'),
    line({ step: 1, 'train/success': 0.5, 'mystery/metric': 3 }) + '{"step": 2, "train/succ',
  );
  // A run whose config.yaml is not YAML and whose metrics hold a non-object line.
  const odd = join(root, 'odd');
  mkdirSync(odd);
  writeFileSync(join(odd, 'config.yaml'), 'algo: [unclosed\n');
  writeFileSync(join(odd, 'metrics.jsonl'), '[1, 2]\n' + line({ step: 1, 'train/success': 1 }));
  dash = await startDashboard({ roots: [root], pollMs: 50 });
});

afterAll(async () => {
  await dash?.close();
});

describe('ragen dashboard server', () => {
  it('lists runs with algorithm, filter, seed, steps and validation before/after read from their files', async () => {
    const { status, body } = await get(dash.url, '/api/runs');
    expect(status).toBe(200);
    const runs = body['runs'] as RunSummary[];
    const good = runs.find((r) => r.name === 'good')!;
    expect(good).toMatchObject({
      id: '0/good',
      algo: 'grpo',
      filter: 'top_p 0.9',
      seed: 7,
      lastStep: 2,
      totalSteps: 2,
      valBefore: 0.25,
      valAfter: 0.75,
      status: 'finished',
      problems: [],
    });
    expect(runs.map((r) => r.name).sort()).toEqual(['bad', 'good', 'odd']);
    const odd = runs.find((r) => r.name === 'odd')!;
    expect(odd.lastStep).toBe(1);
    expect(odd.problems.join('\n')).toMatch(/config\.yaml does not parse/);
    expect(odd.problems.join('\n')).toMatch(/line 1 is not a JSON object/);
  });

  it('reports a truncated last line, an unknown metric and a missing config.yaml as problems, keeping the good lines', async () => {
    const { status, body } = await get(dash.url, '/api/run?id=0/bad');
    expect(status).toBe(200);
    const run = body as unknown as RunDetail;
    expect(run.metrics).toHaveLength(1);
    expect(run.unknownMetrics).toEqual(['mystery/metric']);
    const text = run.problems.join('\n');
    expect(text).toMatch(/config\.yaml is missing/);
    expect(text).toMatch(/last line \(2\) is truncated/);
    expect(text).toMatch(/mystery\/metric/);
  });

  it('skips malformed rollout lines with a sentence each', async () => {
    const { body } = await get(dash.url, '/api/rollouts?id=0/good&step=1');
    expect((body['episodes'] as unknown[]).length).toBe(1);
    const problems = (body['problems'] as string[]).join('\n');
    expect(problems).toMatch(/episode 2 is not an episode record \(`env` should be a string/);
    expect(problems).toMatch(/last line \(3\) is truncated/);
  });

  it('computes success and pass@k per tag from an eval file', async () => {
    const { body } = await get(dash.url, '/api/eval?id=0/good&file=val.jsonl');
    // Group seed 1 has one success in two episodes, group seed 2 none: success 1/4, pass@2 1/2.
    expect(body['summary']).toEqual([
      expect.objectContaining({ env: 'Bandit', episodes: 4, groups: 2, k: 2, success: 0.25, passAtK: 0.5 }),
    ]);
  });

  it('refuses hostile paths and unknown runs, and keeps serving', async () => {
    for (const path of [
      '/../../etc/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
      '/api/run?id=0/..',
      '/api/run?id=0/../../etc',
      '/api/file?id=0/good&path=checkpoints/step-1/../../config.yaml',
      '/..%5c..%5cetc',
    ]) {
      const { status, body } = await get(dash.url, path);
      expect(status, path).toBe(400);
      expect(String(body['error']), path).toMatch(/Refused path/);
    }
    expect((await get(dash.url, '/api/run?id=0/%2Fetc')).status).toBe(404);
    expect((await get(dash.url, '/api/run?id=5/good')).status).toBe(404);
    expect((await get(dash.url, '/api/file?id=0/good&path=config.yaml')).status).toBe(403);
    expect((await get(dash.url, '/api/eval?id=0/good&file=metrics.jsonl')).status).toBe(404);
    expect((await get(dash.url, '/api/rollouts?id=0/good&step=-1')).status).toBe(400);
    expect((await get(dash.url, '/api/runs')).status).toBe(200);
  });

  it('answers only requests addressed to itself (no DNS rebinding)', async () => {
    const port = new URL(dash.url).port;
    expect((await get(dash.url, '/api/runs', { host: `evil.example:${port}` })).status).toBe(403);
    expect((await get(dash.url, '/api/runs', { host: `localhost:${port}` })).status).toBe(200);
  });

  it('announces a changed run on the event stream', async () => {
    const { hostname, port } = new URL(dash.url);
    const got = await new Promise<string>((resolve, reject) => {
      const req = request({ host: hostname, port, path: '/api/events' }, (res) => {
        let text = '';
        let wrote = false;
        res.on('data', (c: Buffer) => {
          text += c.toString();
          if (!wrote && text.includes('event: runs')) {
            wrote = true; // the first poll announced the listing; now append a step to one run
            writeFileSync(join(root, 'good', 'metrics.jsonl'), line({ step: 3, 'train/success': 1 }), { flag: 'a' });
          }
          const m = /event: change\ndata: (.*)\n/.exec(text.slice(text.indexOf('event: runs')));
          if (wrote && m) {
            req.destroy();
            resolve(m[1]!);
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
    expect(JSON.parse(got)).toContain('0/good');
  });
});

describe('tolerant JSONL', () => {
  it('keeps good lines around a corrupt middle line and says which line was bad', () => {
    const r = parseJsonl('{"a":1}\nnot json\n{"a":2}\n', 'x.jsonl');
    expect(r.records).toEqual([{ a: 1 }, { a: 2 }]);
    expect(r.problems).toEqual([expect.stringMatching(/x\.jsonl: line 2 is not valid JSON/)]);
  });

  it('pass@k counts a group once however many of its members succeed', () => {
    const s = evalSummary([
      episode('A', 1, 0, true),
      episode('A', 1, 0, true),
      episode('A', 1, 0, true),
      episode('A', 2, 1, false),
      episode('A', 2, 1, false),
      episode('A', 2, 1, false),
    ]);
    expect(s[0]).toMatchObject({ k: 3, success: 0.5, passAtK: 0.5 });
  });
});
