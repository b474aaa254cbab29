import { copyFileSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadConfig, saveConfig } from '../../config/index.js';
import { writeCheckpoint } from '../../train/index.js';
import { OpenAIServer, localServeTarget } from '../../serve/index.js';
import { TINY_MODEL_DIR } from '../../serve/testing.js';
import { runCli as run } from '../testing.js';
import { resolveModelDir, type EvalReport } from '../../eval/index.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-eval-openai-'));
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of closers) await c();
});

/** A run directory whose latest checkpoint is the shipped tiny model (trained on SimpleSokoban). */
async function tinyRun(): Promise<string> {
  const runDir = join(tmp, 'run');
  saveConfig(loadConfig({ config: 'sokoban-ppo', overrides: ['agent.maxNewTokens=40', 'agent.maxTurns=3'] }), runDir);
  await writeCheckpoint(
    join(runDir, 'checkpoints'),
    { step: 1, data: {} },
    {
      writeModel: (ckpt) => {
        for (const f of readdirSync(TINY_MODEL_DIR))
          if (/\.(json|safetensors)$/.test(f)) copyFileSync(join(TINY_MODEL_DIR, f), join(ckpt, f));
      },
    },
  );
  return runDir;
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('ragen eval --policy openai', () => {
  test('against `ragen serve` of the same checkpoint reproduces `ragen eval --run` (greedy): metrics and every trajectory', async () => {
    const runDir = await tinyRun();
    const server = new OpenAIServer({
      ...(await localServeTarget(runDir, resolveModelDir, { name: 'tiny-run' })),
      contextLength: 8192,
      batchWindowMs: 50,
    });
    const { url } = await server.listen(0);
    closers.push(() => server.close());
    const common = ['--groups', '6', '--greedy', '--json'];
    const local = await run('eval', '--run', runDir, ...common, '--out', join(tmp, 'local.jsonl'));
    expect(local.code, local.err).toBe(0);
    const remote = await run(
      'eval',
      '--run',
      runDir,
      '--policy',
      'openai',
      '--base-url',
      url,
      '--model',
      'tiny-run',
      '--api',
      'completions',
      ...common,
      '--out',
      join(tmp, 'remote.jsonl'),
    );
    expect(remote.code, remote.err).toBe(0);
    const [a, b] = [JSON.parse(local.out) as EvalReport, JSON.parse(remote.out) as EvalReport];
    expect(b.metrics).toEqual(a.metrics);
    expect(a.metrics['SimpleSokoban']!['success']).toBeGreaterThan(0); // the checkpoint plays: the comparison is not of empty episodes
    const [la, lb] = [lines(join(tmp, 'local.jsonl')), lines(join(tmp, 'remote.jsonl'))];
    expect(lb.map(({ usage: _, ...rest }) => rest)).toEqual(la);
    // Usage per episode: the endpoint's token counts, one request per turn.
    lb.forEach((rec) => {
      const u = rec['usage'] as { completion_tokens: number; requests: number; prompt_tokens: number };
      expect(u.requests).toBe((rec['turns'] as unknown[]).length);
      expect(u.completion_tokens).toBe(rec['n_tokens']);
      expect(u.prompt_tokens).toBeGreaterThan(0);
    });
    expect(b.usage!.completionTokens).toBe(lb.reduce((s, r) => s + (r['n_tokens'] as number), 0));
    expect(server.stats.maxBatch).toBeGreaterThan(1); // the episodes' turns reached the engine batched
  });

  test('retries 429 and 5xx with backoff, logging each retry, and gives up with a clear error on a 4xx', async () => {
    let calls = 0;
    const fake = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url?.includes('/models')) return void res.end('{}'); // the context lookup: no length reported
        calls++;
        if (calls % 3 === 1) {
          res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '0.01' });
          return void res.end(
            JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error', param: null, code: null } }),
          );
        }
        if (calls % 3 === 2) {
          res.writeHead(503, { 'Content-Type': 'application/json' });
          return void res.end(
            JSON.stringify({ error: { message: 'overloaded', type: 'server_error', param: null, code: null } }),
          );
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            created: 0,
            model: 'm',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: '<think>push up</think><answer>Up</answer>' },
                finish_reason: 'stop',
                logprobs: null,
              },
            ],
            usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
          }),
        );
      });
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => fake.close(() => r())));
    const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
    const out = join(tmp, 'fake.jsonl');
    const r = await run(
      'eval',
      '--env',
      'SimpleSokoban',
      '--policy',
      'openai',
      '--base-url',
      url,
      '--model',
      'm',
      '--groups',
      '1',
      '--max-turns',
      '2',
      '--concurrency',
      '1',
      '--json',
      '--out',
      out,
    );
    expect(r.code, r.err).toBe(0);
    // The chat reply wrote the <think> tag the loop prefills: it is not doubled, and the answer is played.
    const [rec] = lines(out) as {
      turns: { actions: string[]; format_error: string | null; think: string }[];
      usage: unknown;
    }[];
    expect(rec!.turns.map((t) => [t.actions, t.format_error, t.think])).toEqual([
      [['Up'], null, 'push up'],
      [['Up'], null, 'push up'],
    ]);
    expect(rec!.usage).toEqual({ prompt_tokens: 22, completion_tokens: 6, requests: 2, retries: 4 });
    const report = JSON.parse(r.out) as EvalReport;
    expect(report.usage).toEqual({ promptTokens: 22, completionTokens: 6, requests: 2, retries: 4 });
    expect(r.err.match(/retry \d\/4/g)).toHaveLength(4);
    expect(r.err).toMatch(/429 slow down; retry 1\/4/);
    expect(r.err).toMatch(/503 overloaded; retry 2\/4/);
    const none = await run(
      'eval',
      '--env',
      'SimpleSokoban',
      '--policy',
      'openai',
      '--base-url',
      url,
      '--model',
      'm',
      '--groups',
      '1',
      '--max-retries',
      '0',
    );
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/refused the request \(429: slow down\)/);
  });
});

describe('ragen eval --policy openai --api chat against `ragen serve`, default flags', () => {
  test('plays episodes of 3+ turns: stop at </answer>, the reply cut there, max_tokens fitted to the served context', async () => {
    // The shipped model served as `ragen serve ragen-tiny` serves it: its own context (1024 positions), no flags.
    const server = new OpenAIServer({ ...(await localServeTarget('ragen-tiny', resolveModelDir)), batchWindowMs: 20 });
    const { url } = await server.listen(0);
    closers.push(() => server.close());
    const cards = (await (await fetch(`${url}/models`)).json()) as { data: { id: string; max_model_len: number }[] };
    expect(cards.data).toEqual([expect.objectContaining({ id: 'ragen-tiny', max_model_len: 1024 })]);
    const out = join(tmp, 'chat.jsonl');
    const r = await run(
      'eval',
      '--env',
      'SimpleSokoban',
      '--policy',
      'openai',
      '--base-url',
      url,
      '--model',
      'ragen-tiny',
      '--groups',
      '4',
      '--json',
      '--out',
      out,
    );
    expect(r.code, r.err).toBe(0);
    const recs = lines(out) as { turns: { response: string }[] }[];
    expect(Math.max(...recs.map((e) => e.turns.length))).toBeGreaterThanOrEqual(3);
    const responses = recs.flatMap((e) => e.turns.map((t) => t.response));
    // Nothing after the answer entered the history, and the answers were closed.
    for (const text of responses) expect(text.replace(/<\/answer>[\s\S]*$/, '</answer>')).toBe(text);
    expect(responses.filter((t) => t.endsWith('</answer>')).length).toBeGreaterThan(responses.length / 2);
  }, 120_000);
});

describe('ragen serve and eval --policy openai: usage errors', () => {
  test('name what is missing or wrong and exit 2', async () => {
    const noUrl = await run('eval', '--env', 'SimpleSokoban', '--policy', 'openai', '--model', 'x');
    expect(noUrl.code).toBe(2);
    expect(noUrl.err).toMatch(/--policy openai needs --base-url <url> and --model <name>/);
    const badApi = await run('eval', '--env', 'SimpleSokoban', '--policy', 'openai', '--api', 'grpc');
    expect(badApi.err).toMatch(/Bad --api `grpc`: give chat or completions/);
    const noModel = await run('serve', join(tmp, 'nowhere'));
    expect(noModel.code).toBe(2);
    expect(noModel.err).toMatch(/No model in `.*nowhere`/);
    const badPort = await run('serve', TINY_MODEL_DIR, '--port', '70000');
    expect(badPort.err).toMatch(/Bad --port `70000`/);
  });
});
