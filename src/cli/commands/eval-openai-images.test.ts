// `ragen eval --policy openai` on a visual env: each turn's request carries the observation's image as an image_url
// part (a PNG data: URL) after the state text, the image of that turn's state, and earlier turns keep theirs.
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import '../../envs/index.js';
import { makeEnv } from '../../env/index.js';
import { decodePng } from '../../util/index.js';
import { runCli as run } from '../testing.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-eval-images-'));
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of closers) await c();
});

type Part = { type: string; text?: string; image_url?: { url: string } };
type Message = { role: string; content: string | Part[] };

/** A chat endpoint that records every request's messages and always moves Right. */
async function recordingServer(): Promise<{ url: string; requests: Message[][] }> {
  const requests: Message[][] = [];
  const fake = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url?.includes('/models')) return void res.end('{}');
      requests.push((JSON.parse(body) as { messages: Message[] }).messages);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: 'vlm',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: '<think>go</think><answer>Right</answer>' },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => fake.close(() => r())));
  return { url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`, requests };
}

const pngOf = (part: Part) =>
  decodePng(Buffer.from(part.image_url!.url.replace('data:image/png;base64,', ''), 'base64'));

describe('ragen eval --policy openai with a visual env', () => {
  test('sends each observation image as a PNG data: URL after its state text, turn by turn', async () => {
    const { url, requests } = await recordingServer();
    const r = await run(
      'eval',
      '--env',
      'VisualFrozenLake',
      '--policy',
      'openai',
      '--base-url',
      url,
      '--model',
      'vlm',
      '--groups',
      '1',
      '--max-turns',
      '2',
      '--concurrency',
      '1',
      '--json',
      '--out',
      join(tmp, 'out.jsonl'),
    );
    expect(r.code, r.err).toBe(0);
    expect(requests).toHaveLength(2);
    const [episode] = readFileSync(join(tmp, 'out.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seed: number });
    // The env as eval played it (validation seeds, mode val), stepped as the server answered.
    const env = makeEnv('VisualFrozenLake');
    const states = [(await env.reset({ seed: episode!.seed, mode: 'val' })).images![0]!];
    states.push((await env.step('Right')).images![0]!);
    const [first, second] = requests as [Message[], Message[]];
    expect(first[0]!.content).toEqual(expect.any(String)); // the system message stays text
    const parts = first.at(-1)!.content as Part[];
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url', 'text']);
    expect(parts[0]!.text).toMatch(/State:\n[_OPGH\n]+\n$/); // the image follows the state text
    expect(parts[1]!.image_url!.url).toMatch(/^data:image\/png;base64,/);
    expect(pngOf(parts[1]!)).toEqual(states[0]);
    // Turn 2 keeps turn 1's image in the history and shows the state after Right.
    const images = second.filter((m) => Array.isArray(m.content)).map((m) => pngOf((m.content as Part[])[1]!));
    expect(images).toEqual(states);
    expect(states[1]).not.toEqual(states[0]);
  }, 60_000);
});
