// Issue 42: what `ragen train` trains on through the gateway, end to end. A program (plain fetch) makes two calls per
// episode (the second continues the first's chat), then a third, streamed, that it abandons after the first chunk;
// each episode reports its own reward. Every row of the policy update must be one episode's received calls merged,
// loss only on the ids the program received, and carry that episode's reward, no other.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenBatch } from '../agent/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { openLocalModels } from './engine-setup.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

// The reward is a hash of the episode id (one per episode, unrelated to what was sampled), so a row scored with another
// episode's reward shows; the prompt names the episode, so a row's calls can be told apart from its group-mates'.
const PROGRAM = `
import { appendFileSync } from 'node:fs';
const env = process.env;
const logDir = process.argv[2];
const post = (body, signal) => fetch(env.OPENAI_BASE_URL + '/chat/completions', {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: 'Bearer ' + env.OPENAI_API_KEY },
  body: JSON.stringify({ model: 'policy', return_token_ids: true, ...body }),
  signal,
});
async function chat(messages) {
  const r = await post({ messages, max_tokens: 4 });
  if (!r.ok) throw new Error('chat ' + r.status + ': ' + (await r.text()));
  const body = await r.json();
  return { prompt: body.prompt_token_ids, completion: body.choices[0].token_ids, content: body.choices[0].message.content ?? '' };
}
const task = [{ role: 'user', content: 'task of ' + env.RAGEN_EPISODE }];
const first = await chat(task);
const second = await chat([...task, { role: 'assistant', content: first.content }, { role: 'user', content: 'again' }]);
// the third call continues the second, but the program goes away after its first chunk: it never receives the answer
const abort = new AbortController();
const r = await post({ messages: [...task, { role: 'assistant', content: first.content }, { role: 'user', content: 'again' }, { role: 'assistant', content: second.content }, { role: 'user', content: 'once more, at length' }], max_tokens: 400, stream: true }, abort.signal);
if (!r.ok) throw new Error('streamed chat ' + r.status + ': ' + (await r.text()));
const reader = r.body.getReader();
await reader.read();
abort.abort();
await reader.read().catch(() => undefined);
await new Promise((done) => setTimeout(done, 1500)); // the episode stays open past when that answer would have ended
let h = 7;
for (const ch of env.RAGEN_EPISODE) h = (h * 7919 + ch.charCodeAt(0)) % 1000003;
const reward = (h % 1000) / 100 - 5;
appendFileSync(logDir + '/' + env.RAGEN_EPISODE + '.json', JSON.stringify({ calls: [first, second], reward }) + '\\n');
const rr = await fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward }) });
if (!rr.ok) throw new Error('reward ' + rr.status);
`;

interface Logged {
  calls: { prompt: number[]; completion: number[] }[];
  reward: number;
}

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ragen-agent-credit-'));
  writeFileSync(join(root, 'agent.mjs'), PROGRAM);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** True when `seq` is a prefix of `row`. */
const prefixOf = (seq: readonly number[], row: readonly number[]): boolean =>
  seq.length <= row.length && seq.every((id, i) => row[i] === id);

describe("the gateway trains what the program received, each call on its own episode's reward (issue 42)", () => {
  it("issue 42: every update row is one episode's received calls, loss on their sampled ids only, scored with that episode's reward", async () => {
    const model = await writeMicroModel(join(root, 'model'));
    const logDir = join(root, 'log');
    mkdirSync(logDir);
    const block = `{command: "node ${join(root, 'agent.mjs')} ${logDir}", timeoutS: 60, concurrency: 2}`;
    const dir = join(root, 'run');
    const config = microConfig(model, dir, [
      `env.train=[{agent: ${block}, groups: 2, groupSize: 2}]`,
      'env.val=[]',
      'algo.advEstimator=grpo',
      'trainer.steps=1',
      'agent.maxContextTokens=2048',
      'agent.maxNewTokens=400',
    ]);
    const models = await openLocalModels(config);
    const rows: { ids: number[]; mask: number[]; rewards: number[]; score: number }[] = [];
    const backward = models.engine.backward.bind(models.engine);
    models.engine.backward = (batch, options, lossGrad) => {
      if (options.role === 'policy') {
        const b = batch as TokenBatch; // the trainer hands the engine its token batch's rows (src/train/batch.ts selectRows)
        for (let r = 0; r < b.B; r++) {
          const row = (x: ArrayLike<number>) => Array.from({ length: b.lengths[r]! }, (_, t) => x[r * b.T + t]!);
          rows.push({ ids: row(b.ids), mask: row(b.lossMask), rewards: row(b.rewards), score: b.scores[r]! });
        }
      }
      return backward(batch, options, lossGrad);
    };
    try {
      await train({ config, models });
    } finally {
      models.engine.dispose();
    }
    const episodes = readdirSync(logDir).map((f) => JSON.parse(readFileSync(join(logDir, f), 'utf8')) as Logged);
    expect(episodes).toHaveLength(4);
    expect(new Set(episodes.map((e) => e.reward)).size).toBe(4); // four different rewards: a swap would show
    // the abandoned calls reached the gateway and were dropped there: two recorded calls per episode
    const [m] = readMetricsFile(join(dir, 'metrics.jsonl')).filter((r) => r['step'] === 1);
    expect(m!['gateway/calls']).toBe(8);

    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      // the episode whose received calls open this row (prompts name the episode, so at most one can); a call whose
      // prompt re-renders the history differently opens a row of its own
      const owners = episodes.filter((e) => e.calls.some((c) => prefixOf([...c.prompt, ...c.completion], row.ids)));
      expect(owners, `row ${JSON.stringify(row.ids)}`).toHaveLength(1);
      const ep = owners[0]!;
      const calls = ep.calls.filter((c) => prefixOf([...c.prompt, ...c.completion], row.ids));
      // nothing past the last received call: an abandoned answer, had it been kept, would extend the row
      const last = calls[calls.length - 1]!;
      expect(row.ids.length).toBe(last.prompt.length + last.completion.length);
      // loss exactly on the ids the program received as completions; prompt, template and history tokens masked
      const expected = new Array<number>(row.ids.length).fill(0);
      for (const c of calls)
        for (let t = c.prompt.length; t < c.prompt.length + c.completion.length; t++) expected[t] = 1;
      expect(row.mask).toEqual(expected);
      // credit: the row's own episode's reward, once, on its last sampled token
      expect(row.score).toBeCloseTo(ep.reward, 5);
      const nonZero = row.rewards.flatMap((x, t) => (x !== 0 ? [t] : []));
      expect(nonZero).toEqual([row.mask.lastIndexOf(1)]);
      expect(row.rewards[nonZero[0]!]).toBeCloseTo(ep.reward, 5);
    }
    // and every received call is trained: each opens some row
    for (const e of episodes)
      for (const c of e.calls) expect(rows.some((r) => prefixOf([...c.prompt, ...c.completion], r.ids))).toBe(true);
  }, 120_000);
});
