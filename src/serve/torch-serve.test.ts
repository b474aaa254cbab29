// `ragen serve` over the torch engine (a PyTorch worker on CPU): one chat completion through the `openai` client
// gives the greedy tokens of the local engine on the same checkpoint; streams (per batch) spell the same answer.
// Skipped without PyTorch unless RAGEN_REQUIRE_BACKENDS=1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { torchPythonForTests } from '../engine/torch-testing.js';
import { localServeTarget, torchServeTarget, type ServeTarget } from './load.js';
import { OpenAIServer } from './server.js';
import { TINY_MODEL_DIR } from './testing.js';

const python = torchPythonForTests();

describe.skipIf(!python)('ragen serve --engine torch', () => {
  let target: ServeTarget;
  let local: ServeTarget;
  let server: OpenAIServer;
  let client: OpenAI;
  beforeAll(async () => {
    target = await torchServeTarget(TINY_MODEL_DIR, (d) => d, {
      name: 'tiny',
      torch: { python: python!, device: 'cpu', precision: 'float32' },
    });
    local = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
    server = new OpenAIServer(target);
    const { url } = await server.listen(0);
    client = new OpenAI({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    target?.dispose();
  });

  const messages = [{ role: 'user' as const, content: 'Turn 1:\nState:\n#P_#\nYou have 5 actions left.' }];
  const extra = { return_token_ids: true } as Record<string, unknown>;

  it('answers a greedy chat completion with the tokens the local engine samples, and log-probs close to its', async () => {
    expect(target.engine.kind).toBe('torch');
    const r = (await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 16,
      temperature: 0,
      logprobs: true,
      ...extra,
    })) as any;
    const tok = local.tokenizer;
    const prompt = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }));
    expect(r.prompt_token_ids).toEqual(prompt);
    const [g] = await local.engine.generate([prompt], {
      maxNewTokens: 16,
      temperature: 0,
      stopTokenIds: [tok.eosTokenId],
      seed: 0,
    });
    const c = r.choices[0];
    expect(c.token_ids).toEqual(g!.tokens);
    c.logprobs.content.forEach((e: { logprob: number }, i: number) =>
      expect(e.logprob).toBeCloseTo(g!.logprobs[i]!, 3),
    );
    expect(c.message.content).toBe(tok.decode(g!.finishReason === 'stop' ? g!.tokens.slice(0, -1) : g!.tokens));
  }, 60_000);

  it('streams the same text (sent when the batch finishes) and refuses top_logprobs by name', async () => {
    const whole = (await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 12,
      temperature: 0,
    })) as any;
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 12,
      temperature: 0,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) for (const ch of chunk.choices) text += ch.delta.content ?? '';
    expect(text).toBe(whole.choices[0].message.content);
    const err = await client.chat.completions
      .create({ model: 'tiny', messages, max_tokens: 4, logprobs: true, top_logprobs: 2 })
      .catch((e: unknown) => e as { status: number; param: string });
    expect(err).toMatchObject({ status: 400, param: 'top_logprobs' });
  }, 60_000);
});
