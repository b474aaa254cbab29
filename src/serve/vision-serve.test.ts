// `ragen serve` and the training gateway over a Qwen2.5-VL checkpoint (`ragen model init --shape qwen2.5-vl-tiny`),
// through the official `openai` client: a data: URL image reaches the engine as pixels at its vision tokens, other
// URLs are still refused, and the gateway records an image call whose trained tokens are the sampled ones and whose
// image tokens are never trained.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import '../envs/index.js';
import { makeEnv } from '../env/index.js';
import type { Engine } from '../engine/index.js';
import { Gateway, samplesFromCalls } from '../gateway/index.js';
import { IMAGE_PAD } from '../tokenizer/index.js';
import { encodePng, type RgbImage } from '../util/index.js';
import { localServeTarget, type ServeTarget } from './load.js';
import { OpenAIServer } from './server.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-serve-vl-'));
let target: ServeTarget;
let server: OpenAIServer;
let client: OpenAI;
let lake: RgbImage;
let other: RgbImage;
/** Every generate call the engine got: its prompts and their images. */
const calls: { prompts: number[][]; images: readonly (readonly RgbImage[] | undefined)[] | undefined }[] = [];
const dataUrl = (img: RgbImage) => `data:image/png;base64,${Buffer.from(encodePng(img)).toString('base64')}`;

beforeAll(async () => {
  await initModelDir(join(tmp, 'vl'), 'qwen2.5-vl-tiny', { seed: 1 });
  target = await localServeTarget(join(tmp, 'vl'), (d) => d, { name: 'vl' });
  const engine: Engine = target.engine;
  const generate = engine.generate.bind(engine);
  engine.generate = (prompts, params) => {
    calls.push({ prompts: prompts.map((p) => [...p]), images: params.images });
    return generate(prompts, params);
  };
  server = new OpenAIServer({ ...target });
  client = new OpenAI({ baseURL: (await server.listen(0)).url, apiKey: 'unused', maxRetries: 0 });
  const env = makeEnv('VisualFrozenLake');
  lake = (await env.reset({ seed: 3 })).images![0]!;
  other = (await env.reset({ seed: 4 })).images![0]!;
}, 60_000);
afterAll(async () => {
  await server.close();
  target.dispose();
  rmSync(tmp, { recursive: true, force: true });
});

const ask = (url: string): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'system', content: 'You walk on a frozen lake.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'The lake:' },
      { type: 'image_url', image_url: { url } },
      { type: 'text', text: 'Your move?' },
    ],
  },
];

const padId = () => target.tokenizer.encode(IMAGE_PAD)[0]!;

describe('ragen serve over a vision-language model', () => {
  it('answers a chat request with a data: URL image, the pixels reaching the engine at their vision tokens', async () => {
    calls.length = 0;
    const reply = (url: string) =>
      client.chat.completions.create({
        model: 'vl',
        messages: ask(url),
        max_tokens: 6,
        temperature: 0,
        logprobs: true,
      });
    const r = await reply(dataUrl(lake));
    expect(r.choices[0]!.message.role).toBe('assistant');
    expect(r.choices[0]!.logprobs!.content!.length).toBe(r.usage!.completion_tokens);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.images).toEqual([[lake]]);
    // a 64 x 64 image resizes to 56 x 56: 4 x 4 patches, 2 x 2 after the merge, so 4 <|image_pad|>
    expect(calls[0]!.prompts[0]!.filter((id) => id === padId())).toHaveLength(4);
    // the model reads the pixels: another lake (same text) changes the reply's log-probs
    const o = await reply(dataUrl(other));
    expect(calls[1]!.images).toEqual([[other]]);
    expect(calls[1]!.prompts[0]).toEqual(calls[0]!.prompts[0]);
    expect(o.choices[0]!.logprobs!.content!.map((t) => t.logprob)).not.toEqual(
      r.choices[0]!.logprobs!.content!.map((t) => t.logprob),
    );
    // streamed, the same greedy reply
    const stream = await client.chat.completions.create({
      model: 'vl',
      messages: ask(dataUrl(lake)),
      max_tokens: 6,
      temperature: 0,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(r.choices[0]!.message.content);
  }, 60_000);

  it('still refuses an image it would have to fetch, and top_logprobs with an image, with a sentence', async () => {
    calls.length = 0;
    const err = await client.chat.completions
      .create({ model: 'vl', messages: ask('https://example.com/lake.png'), max_tokens: 2 })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('image_url_not_fetched');
    const top = await client.chat.completions
      .create({ model: 'vl', messages: ask(dataUrl(lake)), max_tokens: 2, logprobs: true, top_logprobs: 2 })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(top).toBeInstanceOf(OpenAI.BadRequestError);
    expect((top as Error).message).toMatch(/top_logprobs are scored by a text-only pass.*1 image/);
    expect(calls).toHaveLength(0);
  });
});

describe('the training gateway over a vision-language model', () => {
  it("records an agent program's image call: trained tokens are the sampled ones, image tokens never trained", async () => {
    const gateway = new Gateway({ ...target });
    await gateway.listen(0);
    try {
      const { baseUrl } = gateway.open('ep-vl');
      // the agent program: one chat call with the lake's image, as an OpenAI client sends it
      const agent = new OpenAI({ baseURL: baseUrl, apiKey: 'dummy', maxRetries: 0 });
      const r = await agent.chat.completions.create({
        model: 'anything',
        messages: ask(dataUrl(lake)),
        max_tokens: 6,
        logprobs: true,
      });
      const log = gateway.finish('ep-vl');
      expect(log.calls).toHaveLength(1);
      const call = log.calls[0]!;
      // what was sampled is what the client got
      expect(call.completionIds.length).toBe(r.usage!.completion_tokens);
      expect(call.logprobs).toEqual(r.choices[0]!.logprobs!.content!.map((t) => t.logprob));
      expect(call.text).toBe(r.choices[0]!.message.content);
      const pads = call.promptIds.flatMap((id, t) => (id === padId() ? [t] : []));
      expect(pads).toHaveLength(4);
      const [sample] = samplesFromCalls(log.calls, 1, { episode: 0, group: 0, tag: 'vl' });
      expect(sample!.ids.filter((_, t) => sample!.lossMask[t] === 1)).toEqual(call.completionIds);
      expect(sample!.logprobs.filter((_, t) => sample!.lossMask[t] === 1)).toEqual(call.logprobs);
      for (const t of pads) expect(sample!.lossMask[t]).toBe(0);
    } finally {
      await gateway.close();
    }
  }, 60_000);
});
