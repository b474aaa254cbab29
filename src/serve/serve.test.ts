import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { serveTiny } from './testing.js';

// The official `openai` client against `ragen serve` on loopback, checked against the engine called directly.
let ctx: Awaited<ReturnType<typeof serveTiny>>;
let client: OpenAI;
const messages = [
  { role: 'system' as const, content: 'You are solving a maze.' },
  { role: 'user' as const, content: 'Turn 1:\nState:\n#P_#\nYou have 5 actions left.' },
];
// Body fields the `openai` types do not know (vLLM's token-in/token-out extension) pass through as-is.
const extra = { return_token_ids: true } as Record<string, unknown>;

beforeAll(async () => {
  ctx = await serveTiny();
  client = new OpenAI({ baseURL: ctx.url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await ctx.server.close();
});

async function direct(prompt: number[], maxNewTokens: number, stopStrings?: string[]) {
  const [g] = await ctx.target.engine.generate([prompt], {
    maxNewTokens,
    temperature: 0,
    stopTokenIds: [ctx.target.tokenizer.eosTokenId],
    ...(stopStrings ? { stopStrings } : {}),
    seed: 0,
  });
  return g!;
}

describe('ragen serve with the openai client', () => {
  it('lists the served model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny']);
  });

  it('answers a greedy chat completion with exactly the tokens and log-probs the engine samples for the templated prompt', async () => {
    const r = (await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 12,
      temperature: 0,
      logprobs: true,
      ...extra,
    })) as any;
    const tok = ctx.target.tokenizer;
    const prompt = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }));
    expect(r.prompt_token_ids).toEqual(prompt);
    const g = await direct(prompt, 12);
    const choice = r.choices[0];
    expect(choice.token_ids).toEqual(g.tokens);
    expect(choice.logprobs.content.map((c: { logprob: number }) => c.logprob)).toEqual(g.logprobs);
    expect(choice.finish_reason).toBe(g.finishReason);
    const content = g.finishReason === 'stop' ? g.tokens.slice(0, -1) : g.tokens;
    expect(choice.message.content).toBe(tok.decode(content));
    expect(r.usage).toEqual({
      prompt_tokens: prompt.length,
      completion_tokens: g.tokens.length,
      total_tokens: prompt.length + g.tokens.length,
    });
  });

  it('takes token-id prompts on /v1/completions and its top_logprobs agree with the sampled log-probs under greedy decoding', async () => {
    const tok = ctx.target.tokenizer;
    const prompt = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }) + '<answer>');
    const r = (await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 8,
      temperature: 0,
      logprobs: 3,
      ...extra,
    })) as any;
    const c = r.choices[0];
    expect(c.prompt_token_ids).toEqual(prompt);
    const lp = c.logprobs;
    expect(lp.token_logprobs).toHaveLength(c.token_ids.length);
    c.token_ids.forEach((id: number, i: number) => {
      // (a JSON object: integer-like keys such as "1" come first in JS, so order by value)
      const alts = Object.entries(lp.top_logprobs[i] as Record<string, number>).sort((a, b) => b[1] - a[1]);
      expect(alts).toHaveLength(3);
      // Greedy picks the argmax: the best alternative (a separate teacher-forced pass) is the sampled token.
      expect(alts[0]![0]).toBe(tok.decode([id]));
      expect(alts[0]![1]).toBeCloseTo(lp.token_logprobs[i], 4);
      expect(alts[0]![1]).toBeGreaterThanOrEqual(alts[1]![1]);
    });
    expect(lp.tokens.join('')).toBe(tok.decode(c.token_ids));
  });

  it('streams the same text and token ids as the whole response', async () => {
    const whole = (await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 10,
      temperature: 0,
      ...extra,
    })) as any;
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 10,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
      ...extra,
    });
    let text = '';
    const ids: number[] = [];
    let finish: string | null = null;
    let usage: unknown;
    for await (const chunk of stream as AsyncIterable<any>) {
      if (chunk.usage) usage = chunk.usage;
      for (const ch of chunk.choices) {
        text += ch.delta.content ?? '';
        ids.push(...(ch.token_ids ?? []));
        finish = ch.finish_reason ?? finish;
      }
    }
    expect(text).toBe(whole.choices[0].message.content);
    expect(ids).toEqual(whole.choices[0].token_ids);
    expect(finish).toBe(whole.choices[0].finish_reason);
    expect(usage).toEqual(whole.usage);
  });

  it('cuts the text before a stop sequence but returns every sampled token id', async () => {
    const tok = ctx.target.tokenizer;
    const prompt = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }));
    const free = await direct(prompt, 12);
    const text = tok.decode(free.tokens);
    const stop = text.slice(3, 5); // a piece the greedy text really contains
    const r = (await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 12,
      temperature: 0,
      stop: [stop],
      ...extra,
    })) as any;
    const stopped = await direct(prompt, 12, [stop]);
    expect(r.choices[0].token_ids).toEqual(stopped.tokens);
    expect(r.choices[0].finish_reason).toBe('stop');
    expect(r.choices[0].text).toBe(text.slice(0, text.indexOf(stop)));
  });

  it('gives n choices and reproduces a seeded sampled request', async () => {
    const ask = () =>
      client.chat.completions.create({
        model: 'tiny',
        messages,
        max_tokens: 8,
        temperature: 1,
        seed: 7,
        n: 2,
        ...extra,
      }) as Promise<any>;
    const [a, b] = [await ask(), await ask()];
    expect(a.choices).toHaveLength(2);
    expect(a.choices.map((c: any) => c.token_ids)).toEqual(b.choices.map((c: any) => c.token_ids));
  });

  it('answers errors in OpenAI format with the status the client maps to its error classes', async () => {
    const err = async (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e as { status: number; code?: string; param?: string },
      );
    const unknown = await err(client.chat.completions.create({ model: 'nope', messages }));
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown!.code).toBe('model_not_found');
    const negative = await err(client.completions.create({ model: 'tiny', prompt: 'hi', max_tokens: -1 }));
    expect(negative).toBeInstanceOf(OpenAI.BadRequestError);
    expect(negative!.param).toBe('max_tokens');
    const hot = await err(client.chat.completions.create({ model: 'tiny', messages, temperature: 3 }));
    expect(hot!.param).toBe('temperature');
    const long = await err(client.completions.create({ model: 'tiny', prompt: 'a '.repeat(3000), max_tokens: 4 }));
    expect(long!.code).toBe('context_length_exceeded');
    const vocab = await err(client.completions.create({ model: 'tiny', prompt: [1, 99999], max_tokens: 4 }));
    expect(vocab!.status).toBe(400);
    const overMax = await err(client.completions.create({ model: 'tiny', prompt: 'hi', max_tokens: 5000 }));
    expect(overMax!.param).toBe('max_tokens');
  });

  it('refuses requests without the API key when one is set', async () => {
    const keyed = await serveTiny({ apiKey: 'sekret' });
    try {
      const bad = new OpenAI({ baseURL: keyed.url, apiKey: 'wrong', maxRetries: 0 });
      await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
      const good = new OpenAI({ baseURL: keyed.url, apiKey: 'sekret', maxRetries: 0 });
      expect((await good.models.list()).data[0]!.id).toBe('tiny');
    } finally {
      await keyed.server.close();
    }
  });
});
