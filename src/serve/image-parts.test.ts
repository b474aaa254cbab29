// `image_url` content parts through the official `openai` client: PNG data: URLs are decoded (and refused by a
// text-only model with the model's name and the fix), other URLs and formats are refused with a sentence; the same
// through the training gateway, which shares the server.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { makeEnv } from '../env/index.js';
import { tinyGateway } from '../gateway/testing.js';
import type { Gateway } from '../gateway/index.js';
import { IMAGE_PLACEHOLDER } from '../tokenizer/index.js';
import { encodePng, type RgbImage } from '../util/index.js';
import { parseChatRequest } from './requests.js';
import { serveTiny } from './testing.js';

let ctx: Awaited<ReturnType<typeof serveTiny>>;
let client: OpenAI;
let gateway: Gateway;
let image: RgbImage;
const dataUrl = (img: RgbImage) => `data:image/png;base64,${Buffer.from(encodePng(img)).toString('base64')}`;

beforeAll(async () => {
  ctx = await serveTiny();
  client = new OpenAI({ baseURL: ctx.url, apiKey: 'unused', maxRetries: 0 });
  gateway = await tinyGateway();
  image = (await makeEnv('VisualFrozenLake').reset({ seed: 3 })).images![0]!;
});
afterAll(async () => {
  await ctx.server.close();
  await gateway.close();
});

/** A user message with text, the image at `url`, and more text. */
const withImage = (url: string): OpenAI.ChatCompletionMessageParam[] => [
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

async function refusal(c: OpenAI, url: string): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await c.chat.completions
    .create({ model: 'tiny', messages: withImage(url), max_tokens: 4 })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  return err as InstanceType<typeof OpenAI.APIError>;
}

describe('image_url parts in requests', () => {
  it('become the image placeholder in the text and the decoded pixels, in order', () => {
    const req = parseChatRequest(
      { model: 'tiny', messages: withImage(dataUrl(image)) },
      { maxChoices: 1, vocabSize: 1000 },
    );
    expect(req.messages[1]!.content).toBe(`The lake:${IMAGE_PLACEHOLDER}Your move?`);
    expect(req.messages[1]!.images).toEqual([image]);
    expect(req.messages[0]!.images).toBeUndefined();
  });

  it('a PNG data: URL is read, then refused by the text-only model with a 400 naming it and the fix', async () => {
    const err = await refusal(client, dataUrl(image));
    expect(err.message).toMatch(/The model `tiny` is text-only and cannot read the image in messages\[1\]/);
    expect(err.message).toMatch(/Send the messages without image_url parts/);
    expect(err.code).toBe('model_not_multimodal');
    expect(err.param).toBe('messages[1].content');
  });

  it('an http(s) URL is refused without being fetched, saying to send a data: URL', async () => {
    const err = await refusal(client, 'https://example.com/lake.png');
    expect(err.message).toMatch(/not fetched by this server \(got a https URL\).*data:image\/png;base64/);
    expect(err.code).toBe('image_url_not_fetched');
    expect(err.param).toBe('messages[1].content[1].image_url.url');
  });

  it('a JPEG, a WebP or a broken PNG is refused with what to send instead', async () => {
    expect((await refusal(client, 'data:image/jpeg;base64,/9j/4AAQ')).message).toMatch(
      /The image is image\/jpeg; this server decodes PNG only.*Re-encode it as PNG/,
    );
    expect((await refusal(client, 'data:image/webp;base64,UklGR')).code).toBe('unsupported_image_format');
    const broken = await refusal(client, 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA');
    expect(broken.message).toMatch(/not a PNG this server reads: The PNG/);
    expect(broken.code).toBe('invalid_image');
  });

  it('text-only requests are answered as before', async () => {
    const r = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
      max_tokens: 2,
      temperature: 0,
    });
    expect(r.choices[0]!.message.role).toBe('assistant');
  });

  it("the training gateway refuses an episode program's image message the same way and records no call", async () => {
    const { baseUrl } = gateway.open('ep-image');
    const err = await refusal(new OpenAI({ baseURL: baseUrl, apiKey: 'dummy', maxRetries: 0 }), dataUrl(image));
    expect(err.message).toMatch(/`tiny` is text-only/);
    expect(gateway.finish('ep-image').calls).toEqual([]);
  });
});
