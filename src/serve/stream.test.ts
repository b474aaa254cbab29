import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Engine, Generation, SamplingParams } from '../engine/index.js';
import { Batcher } from './batcher.js';
import { localServeTarget } from './load.js';
import { OpenAIServer } from './server.js';
import { StreamText } from './stream-text.js';
import { TINY_MODEL_DIR } from './testing.js';

// Token-by-token streaming: chunks leave while the batch still generates, and they spell the whole response.
let target: Awaited<ReturnType<typeof localServeTarget>>;
let server: OpenAIServer;
let client: OpenAI;
/** Client-side count of chunks received, read by the engine wrapper at each decode step. */
let received = 0;
/** `received` at each decode step of the last generate call that reported steps. */
let receivedAtStep: number[] = [];

beforeAll(async () => {
  target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  const inner = target.engine;
  const spy: Engine = {
    kind: inner.kind,
    forward: (b, o) => inner.forward(b, o),
    generate(prompts, params: SamplingParams) {
      if (!params.onTokens) return inner.generate(prompts, params);
      receivedAtStep = [];
      const onTokens = params.onTokens;
      return inner.generate(prompts, {
        ...params,
        onTokens: (s) => {
          receivedAtStep.push(received);
          onTokens(s);
        },
      });
    },
  };
  server = new OpenAIServer({ ...target, engine: spy });
  const { url } = await server.listen(0);
  client = new OpenAI({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

const messages = [{ role: 'user' as const, content: 'Tell a long story.' }];
const extra = { return_token_ids: true } as Record<string, unknown>;

describe('token-by-token streaming', () => {
  it('delivers chunks to the openai client while the completion is still being sampled', async () => {
    received = 0;
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 300,
      temperature: 0,
      stream: true,
      ...extra,
    });
    const ids: number[] = [];
    for await (const chunk of stream as AsyncIterable<any>) {
      received++;
      for (const ch of chunk.choices) ids.push(...(ch.token_ids ?? []));
    }
    expect(ids).toHaveLength(300);
    expect(receivedAtStep).toHaveLength(300);
    // By the time the last token is sampled, the client already read a good part of the stream (whole-batch
    // streaming would read 0 here).
    expect(receivedAtStep[0]).toBeLessThanOrEqual(1); // at most the role chunk before the first token
    expect(receivedAtStep[299]!).toBeGreaterThan(100);
  });

  it('streams deltas that concatenate to the non-streamed text, with the same ids and log-probs, for the same seed', async () => {
    for (const stop of [[], ['</answer>']]) {
      const body = {
        model: 'tiny',
        messages,
        max_tokens: 120,
        temperature: 1,
        seed: 11,
        logprobs: true,
        stop,
        ...extra,
      };
      const whole = (await client.chat.completions.create(body as any)) as any;
      const stream = await client.chat.completions.create({ ...body, stream: true } as any);
      let text = '';
      const ids: number[] = [];
      const lps: number[] = [];
      let finish: string | null = null;
      for await (const chunk of stream as unknown as AsyncIterable<any>) {
        for (const ch of chunk.choices) {
          text += ch.delta.content ?? '';
          ids.push(...(ch.token_ids ?? []));
          lps.push(...(ch.logprobs?.content ?? []).map((c: { logprob: number }) => c.logprob));
          finish = ch.finish_reason ?? finish;
        }
      }
      const w = whole.choices[0];
      if (stop.length > 0) expect(w.finish_reason).toBe('stop'); // the seed's sample does reach the stop sequence
      expect(text).toBe(w.message.content);
      expect(ids).toEqual(w.token_ids);
      expect(lps).toEqual(w.logprobs.content.map((c: { logprob: number }) => c.logprob));
      expect(finish).toBe(w.finish_reason);
    }
  });

  it('streams legacy completions with n choices whose texts match the whole response', async () => {
    const body = { model: 'tiny', prompt: 'State:\n#P_#\n', max_tokens: 40, temperature: 1, seed: 3, n: 2, ...extra };
    const whole = (await client.completions.create(body as any)) as any;
    const stream = await client.completions.create({ ...body, stream: true } as any);
    const texts = ['', ''];
    for await (const chunk of stream as unknown as AsyncIterable<any>)
      for (const ch of chunk.choices) texts[ch.index] += ch.text;
    expect(texts).toEqual(whole.choices.map((c: { text: string }) => c.text));
  });
});

describe('StreamText', () => {
  it('holds back a character until all its bytes arrived and sums to the decoded text', () => {
    const tok = target.tokenizer;
    const text = 'héllo wörld 🎉 日本語!';
    const ids = tok.encode(text);
    const st = new StreamText(tok, [tok.eosTokenId], []);
    const pieces = ids.map((id) => st.push(id));
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false);
    expect(pieces.filter((p) => p === '').length).toBeGreaterThan(0); // tokens that end inside a character
    const sent = pieces.join('');
    expect(sent + st.finish(tok.decode(ids))).toBe(text);
    expect(sent).toBe(text); // nothing was left for the end
  });

  it('never sends a stop sequence or a tail that may begin one, nor the stop token', () => {
    const tok = target.tokenizer;
    const st = new StreamText(tok, [tok.eosTokenId], ['STOP']);
    const sentAfter = (s: string) =>
      tok
        .encode(s)
        .map((id) => st.push(id))
        .join('');
    expect(sentAfter('go to ST')).toBe('go to ');
    expect(sentAfter('ART then')).toBe('START then');
    expect(sentAfter(' STOP and more')).toBe(' ');
    expect(st.push(tok.eosTokenId)).toBe('');
    expect(st.finish('go to START then ')).toBe('');
  });
});

describe('Batcher streaming', () => {
  it('reports each job its own tokens and resolves a short job while a longer one still generates', async () => {
    const batcher = new Batcher(target.engine, { batchWindowMs: 0 });
    const prompt = target.tokenizer.encode('State:\n#P_#\n');
    const seen: number[][] = [[], []];
    const job = (max: number, k: number) => ({
      prompt,
      maxTokens: max,
      temperature: 0,
      topP: 1,
      topK: 0,
      stopTokenIds: [],
      stopStrings: [],
      onToken: (t: number) => seen[k]!.push(t),
    });
    const long = batcher.submit(job(200, 1));
    const short = await batcher.submit(job(5, 0));
    const longSoFar = seen[1]!.length;
    const full = await long;
    expect(short.tokens).toEqual(seen[0]);
    expect(short.tokens).toHaveLength(5);
    expect(full.tokens).toEqual(seen[1]);
    expect(longSoFar).toBeLessThan(200); // (a batch of its own after the long job would leave this at 200)
  });

  it('sends the whole generation when the batch ends on an engine that does not report steps', async () => {
    const inner = target.engine;
    const whole: Engine = {
      kind: 'whole',
      forward: (b, o) => inner.forward(b, o),
      generate: (p, { onTokens: _, ...params }) => inner.generate(p, params),
    };
    const batcher = new Batcher(whole, { batchWindowMs: 0 });
    const prompt = target.tokenizer.encode('State:\n#P_#\n');
    const seen: number[] = [];
    const g: Generation = await batcher.submit({
      prompt,
      maxTokens: 12,
      temperature: 0,
      topP: 1,
      topK: 0,
      stopTokenIds: [],
      stopStrings: [],
      onToken: (t) => seen.push(t),
    });
    expect(g.tokens).toHaveLength(12);
    expect(seen).toEqual(g.tokens);
  });
});
