// Issue 34 item 10: a streamed call the agent abandons (it disconnects after the first chunk) stops generating (the
// disconnect reaches the batcher and the engine's decode loop) and is not recorded, so it is never trained.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { Gateway } from './server.js';

let gateway: Gateway;
let whole: Gateway;
/** Tokens of each generation the engines returned, in order. */
const generated: number[] = [];

beforeAll(async () => {
  const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  const counting: Engine = {
    kind: 'counting',
    generate: async (prompts, params) => {
      const gens = await target.engine.generate(prompts, params);
      generated.push(...gens.map((g) => g.tokens.length));
      return gens;
    },
    forward: (batch, options) => target.engine.forward(batch, options),
  };
  gateway = new Gateway({ ...target, engine: counting });
  await gateway.listen(0);
  // An engine that returns whole generations only (as the torch worker does): no per-step tokens, no stopping early.
  const batchOnly: Engine = {
    ...counting,
    kind: 'whole',
    generate: (prompts, { onTokens: _o, cancelled: _c, ...params }) =>
      new Promise((r) => setTimeout(r, 200)).then(() => counting.generate(prompts, params)),
  };
  whole = new Gateway({ ...target, engine: batchOnly });
  await whole.listen(0);
});
afterAll(async () => {
  await gateway.close();
  await whole.close();
});

/** Start a streamed call, read its first chunk, disconnect (`waitMs` later). */
async function abandon(baseUrl: string, waitMs = 0): Promise<void> {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}/chat/completions`, { method: 'POST', body: body(true), signal: abort.signal });
  const reader = res.body!.getReader();
  const first = await reader.read();
  expect(new TextDecoder().decode(first.value)).toMatch(/^data: /);
  await new Promise((r) => setTimeout(r, waitMs));
  abort.abort(); // the agent goes away mid-answer
  await reader.read().catch(() => undefined);
}

const body = (stream: boolean) =>
  JSON.stringify({
    messages: [{ role: 'user', content: 'Tell me a long story.' }],
    max_tokens: 60,
    temperature: 1,
    seed: 3,
    stream,
  });

describe('an abandoned stream (item 10)', () => {
  it('item 10: a stream the agent abandons after its first chunk stops generating early and is not recorded', async () => {
    // The same call read to its end: 60 tokens (the reference the abandoned call must stop short of).
    const whole = gateway.open('whole');
    const full = await fetch(`${whole.baseUrl}/chat/completions`, { method: 'POST', body: body(false) });
    expect(full.status).toBe(200);
    expect(gateway.finish('whole').calls.map((c) => c.completionIds.length)).toEqual([60]);
    expect(generated).toEqual([60]);

    await abandon(gateway.open('abandoned').baseUrl);
    for (let i = 0; i < 100 && generated.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(generated).toHaveLength(2);
    expect(generated[1]!).toBeLessThan(60);
    await new Promise((r) => setTimeout(r, 100)); // the handler has finished with the call
    expect(gateway.finish('abandoned').calls).toEqual([]);
  }, 30_000);

  it('item 10: on an engine that cannot stop mid-generation, an abandoned stream is still not recorded', async () => {
    generated.length = 0;
    await abandon(whole.open('abandoned').baseUrl, 100); // once its batch runs (the engine takes 200 ms)
    for (let i = 0; i < 100 && generated.length < 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(generated).toEqual([60]); // generated to the end: nothing could stop it
    await new Promise((r) => setTimeout(r, 100));
    expect(whole.finish('abandoned').calls).toEqual([]);
  }, 30_000);
});
