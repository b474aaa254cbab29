import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { serveTiny } from './testing.js';

// A bounded load test: 200 concurrent requests through the official client, all answered, in few batches,
// each answer equal to the engine's own greedy generation of that prompt alone.
let ctx: Awaited<ReturnType<typeof serveTiny>>;
beforeAll(async () => {
  // The client runs in this process and the engine blocks it while generating, so a burst needs a wider window
  // than the 5 ms default to finish arriving (a client in its own process keeps sending meanwhile).
  ctx = await serveTiny({ maxBatchSize: 64, batchWindowMs: 50 });
});
afterAll(async () => {
  await ctx.server.close();
});

describe('ragen serve under load', () => {
  it('answers 200 concurrent requests by batching them into shared generate calls', async () => {
    const client = new OpenAI({ baseURL: ctx.url, apiKey: 'x', maxRetries: 0 });
    const N = 200;
    const contents = Array.from({ length: N }, (_, i) => `Turn ${i}:\nState:\n${'#_P'.repeat(1 + (i % 5))}`);
    const before = { ...ctx.server.stats };
    const answers = await Promise.all(
      contents.map(
        (content, i) =>
          client.chat.completions.create({
            model: 'tiny',
            messages: [{ role: 'user', content }],
            max_tokens: 3 + (i % 4),
            temperature: 0,
            return_token_ids: true,
          } as never) as Promise<any>,
      ),
    );
    const stats = ctx.server.stats;
    const batches = stats.batches - before.batches;
    expect(stats.jobs - before.jobs).toBe(N);
    expect(answers.every((a) => a.choices[0].token_ids.length >= 1)).toBe(true);
    // Batched: far fewer generate calls than requests, and some call took many prompts at once.
    expect(batches).toBeLessThanOrEqual(N / 8);
    expect(stats.maxBatch).toBeGreaterThanOrEqual(16);
    // Batching does not change what a greedy request gets (each row cut to its own max_tokens).
    const tok = ctx.target.tokenizer;
    for (const i of [0, 57, 133, 199]) {
      const prompt = tok.encode(
        tok.applyChatTemplate([{ role: 'user', content: contents[i]! }], { addGenerationPrompt: true }),
      );
      const [g] = await ctx.target.engine.generate([prompt], {
        maxNewTokens: 3 + (i % 4),
        temperature: 0,
        stopTokenIds: [tok.eosTokenId],
        seed: 0,
      });
      expect(answers[i].choices[0].token_ids).toEqual(g!.tokens);
    }
  });

  it('answers 429 in OpenAI format beyond the concurrent-request limit, and the client retries it', async () => {
    const small = await serveTiny({ maxConcurrent: 2 });
    try {
      const client = new OpenAI({ baseURL: small.url, apiKey: 'x', maxRetries: 0 });
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, () =>
          client.completions.create({ model: 'tiny', prompt: 'Turn 1', max_tokens: 4, temperature: 0 }),
        ),
      );
      const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((e) => e instanceof OpenAI.RateLimitError)).toBe(true);
      expect(results.some((r) => r.status === 'fulfilled')).toBe(true);
    } finally {
      await small.server.close();
    }
  });
});
