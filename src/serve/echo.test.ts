import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveTiny } from './testing.js';

// `echo` on /v1/completions: the prompt's log-probs (what a distillation teacher or an evaluation harness scores),
// checked against the log-probs the sampler itself recorded for the same tokens.
let ctx: Awaited<ReturnType<typeof serveTiny>>;

beforeAll(async () => {
  ctx = await serveTiny();
});
afterAll(async () => {
  await ctx.server.close();
});

async function post(body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const r = await fetch(`${ctx.url}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', ...body }),
  });
  return { status: r.status, json: await r.json() };
}

describe('echo on /v1/completions', () => {
  it('scores a prompt with max_tokens 0: a teacher-forced pass gives the log-probs the sampler recorded', async () => {
    const tok = ctx.target.tokenizer;
    const prompt = tok.encode(
      tok.applyChatTemplate([{ role: 'user', content: 'Go left.' }], { addGenerationPrompt: true }),
    );
    const sampled = await post({ prompt, max_tokens: 6, temperature: 0, logprobs: 0, return_token_ids: true });
    expect(sampled.status).toBe(200);
    const gen: number[] = sampled.json.choices[0].token_ids;
    const genLogprobs: number[] = sampled.json.choices[0].logprobs.token_logprobs;
    expect(gen.length).toBeGreaterThan(1);

    const scored = await post({ prompt: [...prompt, ...gen], max_tokens: 0, echo: true, logprobs: 0 });
    expect(scored.status).toBe(200);
    const c = scored.json.choices[0];
    const lp: (number | null)[] = c.logprobs.token_logprobs;
    expect(lp).toHaveLength(prompt.length + gen.length);
    expect(lp[0]).toBeNull();
    expect(lp.slice(1).every((x) => typeof x === 'number' && x <= 0)).toBe(true);
    lp.slice(prompt.length).forEach((x, i) => expect(x).toBeCloseTo(genLogprobs[i]!, 4));
    expect(c.text).toBe(tok.decode([...prompt, ...gen]));
    expect(c.logprobs.tokens.join('')).toBe(c.text);
    expect(scored.json.usage.completion_tokens).toBe(0);
  });

  it('with max_tokens > 0 the prompt comes first, then the completion', async () => {
    const r = await post({ prompt: 'Turn 1: go', max_tokens: 3, temperature: 0, echo: true, logprobs: 1 });
    expect(r.status).toBe(200);
    const c = r.json.choices[0];
    const promptLen = ctx.target.tokenizer.encode('Turn 1: go').length;
    expect(c.logprobs.token_logprobs).toHaveLength(promptLen + r.json.usage.completion_tokens);
    expect(c.text.startsWith('Turn 1: go')).toBe(true);
    expect(c.logprobs.top_logprobs[0]).toBeNull();
    expect(Object.keys(c.logprobs.top_logprobs[promptLen])).toHaveLength(1);
  });

  it('refuses max_tokens 0 without echo, and echo with stream, naming the field', async () => {
    const zero = await post({ prompt: 'hi', max_tokens: 0 });
    expect(zero.status).toBe(400);
    expect(zero.json.error.message).toMatch(/needs `echo: true`/);
    const stream = await post({ prompt: 'hi', echo: true, stream: true });
    expect(stream.status).toBe(400);
    expect(stream.json.error.param).toBe('echo');
  });
});
