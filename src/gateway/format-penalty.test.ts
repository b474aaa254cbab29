// A garbled tool call costs the episode `formatPenalty`, as an unparsable action does in the built-in loop: the
// turn carries the penalty, the score and every sample's reward are the program's reward plus it, while success and
// the env return stay the program's own.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentProgram } from '../agent/index.js';
import { ScriptedEngine } from '../agent/testing.js';
import { loadTokenizer, toolCallText } from '../tokenizer/index.js';
import { agentRollout } from './agent-rollout.js';
import type { Gateway } from './server.js';
import { scriptedGateway } from './testing.js';

const OPENAI = pathToFileURL(join(import.meta.dirname, '..', '..', 'node_modules', 'openai', 'index.mjs')).href;
const dir = mkdtempSync(join(tmpdir(), 'ragen-format-penalty-'));
const tokenizer = loadTokenizer('models/guess-number-tiny');
const good = `${toolCallText({ name: 'guess', arguments: { n: 8 } }, tokenizer.toolFormat)}<|im_end|>`;
const garbled = '<tool_call>\nguess n=8\n</tool_call><|im_end|>'; // a call in no tool format
// Episode member m: its second call is garbled when m is odd; a third call has no tools (plain chat, never a format
// error whatever it says).
const engine = new ScriptedEngine(tokenizer, (prompt) => {
  const m = Number(/member (\d)/.exec(prompt)![1]);
  const call = (prompt.match(/<\|im_start\|>assistant/g) ?? []).length; // earlier replies in the prompt, + 1
  if (prompt.includes('no tools')) return garbled;
  return call === 2 && m % 2 === 1 ? garbled : good;
});
let gateway: Gateway;

beforeAll(async () => {
  gateway = await scriptedGateway(engine, tokenizer);
  const file = join(dir, 'agent.mjs');
  writeFileSync(
    file,
    `import OpenAI from '${OPENAI}';
const env = process.env;
const m = /-m(\\d+)$/.exec(env.RAGEN_EPISODE)[1];
const client = new OpenAI({ maxRetries: 0 });
const tools = [{ type: 'function', function: { name: 'guess', parameters: { type: 'object', properties: { n: { type: 'integer' } } } } }];
const messages = [{ role: 'user', content: 'member ' + m }];
for (let k = 0; k < 2; k++) {
  const r = await client.chat.completions.create({ model: 'policy', messages, tools, max_tokens: 48 });
  const msg = r.choices[0].message;
  messages.push(msg);
  for (const c of msg.tool_calls ?? []) messages.push({ role: 'tool', tool_call_id: c.id, content: 'higher' });
  if (!msg.tool_calls) messages.push({ role: 'user', content: 'go on' });
}
await client.chat.completions.create({ model: 'policy', messages: [{ role: 'user', content: 'member ' + m + ', no tools' }], max_tokens: 48 });
await fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });
`,
  );
});
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

async function rollout(formatPenalty?: number) {
  const file = join(dir, 'agent.mjs');
  const program = agentProgram({
    command: `node ${JSON.stringify(file)}`,
    timeoutS: 30,
    ...(formatPenalty === undefined ? {} : { formatPenalty }),
  });
  const { batch } = await agentRollout(gateway, program, {
    tag: 'Guess',
    groups: 1,
    groupSize: 2,
    seedBase: 0,
    idPrefix: 'fp',
  });
  return batch;
}

describe('formatPenalty of an agent program', () => {
  it('charges each garbled tool call, by default as the built-in loop charges an unparsable action', async () => {
    const batch = await rollout();
    const [clean, messy] = batch.episodes;
    expect(clean!.turns.map((t) => t.penalty)).toEqual([0, 0, 0]);
    expect(messy!.turns.map((t) => t.penalty)).toEqual([0, -0.1, 0]); // the tool-less third call is not a format error
    expect(messy!.turns.map((t) => t.formatError !== undefined)).toEqual([false, true, false]);
    expect([clean!.score, clean!.envReturn, clean!.success]).toEqual([1, 1, true]);
    expect(messy!.score).toBeCloseTo(0.9, 12);
    expect([messy!.envReturn, messy!.success]).toEqual([1, true]);
    for (const [i, e] of batch.episodes.entries()) {
      const samples = batch.samples.filter((s) => s.episode === i);
      expect(samples.length).toBeGreaterThan(0);
      for (const s of samples) {
        expect(s.score).toBe(e.score);
        // the outcome reward sits on the chain's last sampled token, nothing elsewhere
        const last = s.lossMask.lastIndexOf(1);
        expect(s.rewards[last]).toBe(e.score);
        expect(s.rewards.filter((r, t) => t !== last && r !== 0)).toEqual([]);
      }
    }
  });

  it('formatPenalty: 0 scores the program reward alone, and a positive penalty is refused', async () => {
    const batch = await rollout(0);
    expect(batch.episodes.map((e) => e.score)).toEqual([1, 1]);
    expect(batch.samples.every((s) => s.score === 1)).toBe(true);
    expect(() => agentProgram({ command: 'true', formatPenalty: 0.5 })).toThrow(/formatPenalty/);
  });
});
