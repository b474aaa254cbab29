import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serveTiny } from './testing.js';

// The limits a request meets before it costs work: n within what the server answers, a prompt's bytes bounded before
// tokenizing, and one abort listener per request however many choices it asks for.
let ctx: Awaited<ReturnType<typeof serveTiny>>;
beforeAll(async () => {
  ctx = await serveTiny({ maxBodyBytes: 4 << 20 });
});
afterAll(async () => {
  await ctx.server.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const r = await fetch(`${ctx.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, text: await r.text() };
}
const error = (text: string) =>
  (JSON.parse(text) as { error: { code: string | null; param: string | null; message: string } }).error;

describe('request limits', () => {
  it('names the n the server allows (64 by default), not a wider parser bound', async () => {
    for (const path of ['/completions', '/chat/completions']) {
      const body = path.includes('chat')
        ? { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], n: 200 }
        : { model: 'tiny', prompt: 'hi', n: 200 };
      const r = await post(path, body);
      expect(r.status).toBe(400);
      expect(error(r.text).param).toBe('n');
      expect(error(r.text).message).toMatch(/64/);
      expect(error(r.text).message).not.toMatch(/128/);
    }
  });

  it('refuses a 900 KB prompt by its bytes, before the tokenizer sees it', async () => {
    const big = 'Turn 1: State: ____ '.repeat(45_000); // 900,000 bytes
    const encode = vi.spyOn(ctx.target.tokenizer, 'encode');
    try {
      for (const [path, body, param] of [
        ['/completions', { model: 'tiny', prompt: big, max_tokens: 1 }, 'prompt'],
        ['/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: big }], max_tokens: 1 }, 'messages'],
      ] as const) {
        const r = await post(path, body);
        expect(r.status).toBe(400);
        expect(error(r.text)).toMatchObject({ code: 'context_length_exceeded', param });
        expect(error(r.text).message).toMatch(
          /^The prompt is \d+ bytes; this model's context of \d+ tokens holds at most \d+ bytes/,
        );
      }
      expect(encode.mock.calls.filter(([text]) => text.length > 100_000)).toEqual([]);
    } finally {
      encode.mockRestore();
    }
  });

  it('a prompt within the byte bound but over the context still gets the token-count answer', async () => {
    const r = await post('/completions', { model: 'tiny', prompt: 'a b '.repeat(3000), max_tokens: 1 });
    expect(r.status).toBe(400);
    expect(error(r.text).message).toMatch(/context is \d+ tokens; the prompt has \d+/);
  });

  it('answers n = 16 (streamed and not) without a MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const plain = await post('/completions', { model: 'tiny', prompt: 'Turn 1', max_tokens: 2, n: 16 });
      expect(plain.status).toBe(200);
      expect((JSON.parse(plain.text) as { choices: unknown[] }).choices).toHaveLength(16);
      const streamed = await post('/chat/completions', {
        model: 'tiny',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 2,
        n: 16,
        stream: true,
      });
      expect(streamed.status).toBe(200);
      expect(streamed.text).toMatch(/"index":15/);
      await new Promise((r) => setTimeout(r, 50)); // warnings are emitted on a later tick
      expect(warnings.filter((w) => w.includes('MaxListeners'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
