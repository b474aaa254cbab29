// Streaming through the gateway: chunks leave while the local engine is still sampling, the deltas add up to the
// non-streamed answer, the recorded ids are the sampled ids, multi-byte characters are never split, and a tool call
// is not leaked as content but parsed by the official `openai` client's stream helper.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, Generation, SamplingParams } from '../engine/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { Gateway } from './server.js';
import { ToolHold } from './stream.js';

let target: Awaited<ReturnType<typeof localServeTarget>>;
const gateways: Gateway[] = [];

beforeAll(async () => {
  target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
});
afterAll(async () => {
  for (const g of gateways) await g.close();
});

async function gatewayOver(engine: Engine): Promise<Gateway> {
  const g = new Gateway({ ...target, engine, maxTokens: 128 });
  await g.listen(0);
  gateways.push(g);
  return g;
}

/** The engine, noting what each generate call returned and when it returned it. */
function spied(inner: Engine): Engine & { returned: { at: number; gens: Generation[] }[] } {
  const returned: { at: number; gens: Generation[] }[] = [];
  return {
    kind: inner.kind,
    returned,
    forward: (b, o) => inner.forward(b, o),
    async generate(prompts, params) {
      const gens = await inner.generate(prompts, params);
      returned.push({ at: performance.now(), gens });
      return gens;
    },
  };
}

/** An engine that "samples" a fixed text's ids (then EOS), one decode step per event-loop turn, reporting each step. */
function scripted(text: string): Engine {
  const ids = [...target.tokenizer.encode(text), target.tokenizer.eosTokenId];
  return {
    kind: 'scripted',
    forward: () => Promise.reject(new Error('not used')),
    async generate(prompts, params: SamplingParams) {
      const gens = prompts.map(() => ({
        tokens: [] as number[],
        logprobs: [] as number[],
        finishReason: 'stop' as const,
      }));
      for (const [t, id] of ids.slice(0, params.maxNewTokens).entries()) {
        params.onTokens?.(
          prompts.map((_, index) => ({ index, token: id, logprob: -0.5, stopped: t === ids.length - 1 })),
        );
        for (const g of gens) (g.tokens.push(id), g.logprobs.push(-0.5));
        await new Promise((r) => setImmediate(r));
      }
      return gens;
    },
  };
}

/**
 * POST a streaming chat call with fetch; returns the content deltas with their arrival times, and the parsed chunks.
 */
async function streamRaw(
  baseUrl: string,
  body: Record<string, unknown>,
): Promise<{ deltas: { text: string; at: number }[]; chunks: Record<string, unknown>[] }> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(res.status).toBe(200);
  const deltas: { text: string; at: number }[] = [];
  const chunks: Record<string, unknown>[] = [];
  let buf = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body!) {
    const at = performance.now();
    buf += decoder.decode(bytes as Uint8Array, { stream: true });
    for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
      const event = buf.slice(0, i).replace(/^data: /, '');
      buf = buf.slice(i + 2);
      if (event === '[DONE]') continue;
      const chunk = JSON.parse(event) as { choices: { delta: { content?: string } }[] };
      chunks.push(chunk);
      const text = chunk.choices[0]?.delta.content;
      if (text) deltas.push({ text, at });
    }
  }
  return { deltas, chunks };
}

describe('gateway streaming', () => {
  it('sends content while the local engine samples; the deltas are the whole answer; the recorded ids the sampled ones', async () => {
    const engine = spied(target.engine);
    const gateway = await gatewayOver(engine);
    const body = {
      model: 'p',
      messages: [{ role: 'user', content: 'Tell me a long story about boxes.' }],
      max_tokens: 40,
      temperature: 1,
      seed: 4,
    };
    const { baseUrl } = gateway.open('s-long');
    const streamed = await streamRaw(baseUrl, body);
    const plain = (await (
      await fetch(`${baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify(body) })
    ).json()) as { choices: { message: { content: string } }[] };
    const log = gateway.finish('s-long');

    const [first, second] = engine.returned;
    expect(first!.gens[0]!.tokens.length).toBeGreaterThanOrEqual(30);
    expect(streamed.deltas.length).toBeGreaterThan(2);
    expect(streamed.deltas[0]!.at).toBeLessThan(first!.at); // the first delta came before generation ended
    expect(streamed.deltas.map((d) => d.text).join('')).toBe(plain.choices[0]!.message.content);
    expect(log.calls.map((c) => c.completionIds)).toEqual([first!.gens[0]!.tokens, second!.gens[0]!.tokens]);
    expect(log.calls[0]!.completionIds).toEqual(log.calls[1]!.completionIds); // same seed, streamed or not
    expect(log.calls[0]!.logprobs).toEqual(first!.gens[0]!.logprobs);
    const finish = streamed.chunks.at(-1) as { choices: { finish_reason: string }[] };
    expect(finish.choices[0]!.finish_reason).toBe(first!.gens[0]!.finishReason);
  }, 60_000);

  it('never splits a multi-byte character across deltas', async () => {
    const text = 'Sum: é€😀 ok 😀😀';
    const gateway = await gatewayOver(scripted(text));
    const { baseUrl } = gateway.open('s-utf8');
    const { deltas } = await streamRaw(baseUrl, { messages: [{ role: 'user', content: 'x' }] });
    gateway.finish('s-utf8');
    expect(deltas.length).toBeGreaterThan(3);
    for (const d of deltas) expect(d.text).not.toMatch(/\uFFFD|[\uD800-\uDBFF]$|^[\uDC00-\uDFFF]/);
    expect(deltas.map((d) => d.text).join('')).toBe(text);
  }, 30_000);

  it("holds a tool call back from the content and streams it as tool_calls the openai client's stream helper parses", async () => {
    const text = 'Let me compute é.\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+3"}}\n</tool_call>';
    const gateway = await gatewayOver(scripted(text));
    const { baseUrl } = gateway.open('s-tool');
    const client = new OpenAI({ baseURL: baseUrl, apiKey: 'x', maxRetries: 0 });
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'calc', parameters: { type: 'object', properties: { expr: { type: 'string' } } } },
      },
    ];
    const messages = [{ role: 'user' as const, content: 'What is 2+3?' }];
    const contentDeltas: string[] = [];
    const stream = client.chat.completions.stream({ model: 'p', messages, tools });
    stream.on('content', (d) => contentDeltas.push(d));
    const final = await stream.finalChatCompletion();
    const plain = await client.chat.completions.create({ model: 'p', messages, tools });
    const log = gateway.finish('s-tool');

    const msg = final.choices[0]!.message;
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(
      msg.tool_calls?.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)]),
    ).toEqual([['calc', { expr: '2+3' }]]);
    expect(msg.content).toBe('Let me compute é.');
    expect(contentDeltas.length).toBeGreaterThan(1);
    expect(contentDeltas.join('')).toBe(plain.choices[0]!.message.content);
    for (const d of contentDeltas) expect(d).not.toMatch(/<|tool_call/);
    expect(plain.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function.arguments)).toEqual(
      msg.tool_calls?.map((c) => c.type === 'function' && c.function.arguments),
    );
    expect(log.calls.map((c) => c.completionIds)).toEqual(
      [0, 1].map(() => [...target.tokenizer.encode(text), target.tokenizer.eosTokenId]),
    );
  }, 30_000);
});

describe('ToolHold', () => {
  it('holds a possible <tool_call> and trailing whitespace, releases text that turns out to be content', () => {
    const h = new ToolHold(true);
    expect(h.push('Hi <')).toBe('Hi');
    expect(h.push('tool')).toBe('');
    expect(h.push('box> x\n')).toBe(' <toolbox> x');
    expect(h.push('<tool_')).toBe('');
    expect(h.push('call> {')).toBe('');
    expect(h.push(' more text')).toBe('');
    expect(h.sentText).toBe('Hi <toolbox> x');
    const plain = new ToolHold(false);
    expect(plain.push('a <tool_call> b ')).toBe('a <tool_call> b ');
  });
});
