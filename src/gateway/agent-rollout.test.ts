// An agent program's episodes as a rollout batch: groups share a seed, failures score the failure reward, every
// sampled id is in a sample of its episode, and the trainer's own filter/collate step takes the batch as it is.
import '../envs/index.js'; // the built-in environments
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentProgram, episodeRecord } from '../agent/index.js';
import { defaultConfig } from '../config/index.js';
import type { TrainableEngine } from '../engine/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { filterBatch } from '../train/index.js';
import { agentRollout } from './agent-rollout.js';
import { Gateway } from './server.js';

const OPENAI = pathToFileURL(join(import.meta.dirname, '..', '..', 'node_modules', 'openai', 'index.mjs')).href;
const dir = mkdtempSync(join(os.tmpdir(), 'ragen-agent-rollout-'));
let target: Awaited<ReturnType<typeof localServeTarget>>;
let gateway: Gateway;

beforeAll(async () => {
  target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  gateway = new Gateway({ ...target, maxTokens: 8, sampling: { temperature: 1, topP: 1, topK: 0 } });
  await gateway.listen(0);
});
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('agentRollout', () => {
  it('turns groups x groupSize program runs into the batch the trainer filters and collates', async () => {
    const file = join(dir, 'agent.mjs');
    // Member m of group g: m = 0 of group 0 crashes after its call; others report g + m / 10.
    writeFileSync(
      file,
      `import OpenAI from '${OPENAI}';
const env = process.env;
const [, g, m] = /-g(\\d+)-m(\\d+)$/.exec(env.RAGEN_EPISODE).map(Number);
const client = new OpenAI({ maxRetries: 0 });
await client.chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'task ' + env.RAGEN_SEED }], max_tokens: 5 });
await client.chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'again' }], max_tokens: 5 }).catch(() => {}); // over maxCalls: 429
if (g === 0 && m === 0) process.exit(2);
await fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: g + m / 10 }) });
`,
    );
    const program = agentProgram({
      command: `node ${JSON.stringify(file)}`,
      timeoutS: 30,
      failureReward: -0.5,
      concurrency: 3,
      maxCalls: 1,
    });
    const { batch, outcomes } = await agentRollout(gateway, program, {
      tag: 'MyAgent',
      groups: 2,
      groupSize: 3,
      seedBase: 100,
      idPrefix: 'step1',
    });

    expect(outcomes.map((o) => o.status)).toEqual(['crashed', 'ok', 'ok', 'ok', 'ok', 'ok']);
    expect(batch.episodes.map((e) => [e.group, e.member, e.seed, e.score])).toEqual([
      [0, 0, 100, -0.5],
      [0, 1, 100, 0.1],
      [0, 2, 100, 0.2],
      [1, 0, 101, 1],
      [1, 1, 101, 1.1],
      [1, 2, 101, 1.2],
    ]);
    expect(batch.episodes.map((e) => e.success)).toEqual([false, true, true, true, true, true]);
    expect(batch.groupSize).toBe(3);
    expect(outcomes.map((o) => [o.log.calls.length, o.log.refusedCalls])).toEqual(outcomes.map(() => [1, 1]));
    expect(batch.metrics['MyAgent']!['success']).toBeCloseTo(5 / 6, 10);
    for (const [i, e] of batch.episodes.entries()) {
      const mine = batch.samples.filter((s) => s.episode === i);
      expect(mine.length).toBeGreaterThan(0);
      for (const s of mine) expect([s.group, s.score, s.tag]).toEqual([e.group, e.score, 'MyAgent']);
      expect(mine.flatMap((s) => s.ids.filter((_, t) => s.lossMask[t] === 1))).toEqual(
        e.turns.flatMap((t) => t.tokens),
      );
    }

    const filtered = await filterBatch(
      target.engine as TrainableEngine,
      defaultConfig(),
      batch,
      target.tokenizer.padTokenId,
    );
    expect(filtered.all.B).toBe(batch.samples.length);
    let sampled = 0;
    for (const v of filtered.all.lossMask) sampled += v;
    expect(sampled).toBe(batch.episodes.reduce((a, e) => a + e.turns.reduce((b, t) => b + t.tokens.length, 0), 0));
    for (const row of filtered.keptRows) expect(filtered.keptEpisodes.has(batch.samples[row]!.episode)).toBe(true);
  }, 60_000);
  it("keeps each call's request and the reply the program got on its turn, and the rollout record carries them", async () => {
    const file = join(dir, 'tool-agent.mjs');
    const got = join(dir, 'got.json');
    // One call with a tool, an earlier tool call and its result in the history; the reply the program received is saved.
    writeFileSync(
      file,
      `import OpenAI from '${OPENAI}';
import { writeFileSync } from 'node:fs';
const client = new OpenAI({ maxRetries: 0 });
const tools = [{ type: 'function', function: { name: 'look', description: 'Look around.', parameters: { type: 'object', properties: {} } } }];
const messages = [
  { role: 'user', content: 'Find the key.' },
  { role: 'assistant', content: '', tool_calls: [{ id: 't1', type: 'function', function: { name: 'look', arguments: '{}' } }] },
  { role: 'tool', tool_call_id: 't1', content: 'a key on the table' },
];
const r = await client.chat.completions.create({ model: 'p', messages, tools, max_tokens: 6 });
writeFileSync(${JSON.stringify(got)}, JSON.stringify({ messages, tools, reply: r.choices[0].message }));
await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });
`,
    );
    const program = agentProgram({ command: `node ${JSON.stringify(file)}`, timeoutS: 30, concurrency: 1 });
    const { batch } = await agentRollout(gateway, program, {
      tag: 'ToolAgent',
      groups: 1,
      groupSize: 1,
      seedBase: 0,
      idPrefix: 'tools',
    });
    const sent = JSON.parse(readFileSync(got, 'utf8')) as { messages: unknown[]; tools: unknown[]; reply: object };
    const turn = batch.episodes[0]!.turns[0]!;
    expect(turn.agentCall).toEqual(sent);
    const record = episodeRecord(batch.episodes[0]!, { enableThink: false });
    expect(JSON.parse(JSON.stringify(record)).turns[0].call).toEqual(turn.agentCall);
  }, 60_000);
});
