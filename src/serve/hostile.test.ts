import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { connect } from 'node:net';
import OpenAI from 'openai';
import { serveTiny } from './testing.js';

// Hostile and careless clients: every one gets an answer (or is cut off) and the server keeps serving.
let ctx: Awaited<ReturnType<typeof serveTiny>>;
let port: number;
const logs: string[] = [];

beforeAll(async () => {
  ctx = await serveTiny({ maxBodyBytes: 4096, log: (l) => logs.push(l) });
  port = Number(new URL(ctx.url).port);
});
afterAll(async () => {
  await ctx.server.close();
});

/** One raw HTTP request; resolves with status and body text. */
function raw(
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: { 'Content-Type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

async function stillServes(): Promise<void> {
  const client = new OpenAI({ baseURL: ctx.url, apiKey: 'x', maxRetries: 0 });
  const r = await client.completions.create({ model: 'tiny', prompt: 'Turn 1', max_tokens: 3, temperature: 0 });
  expect(r.choices[0]!.finish_reason).toMatch(/stop|length/);
}

const error = (text: string) =>
  (JSON.parse(text) as { error: { type: string; code: string | null; param: string | null; message: string } }).error;

describe('hostile requests', () => {
  it('answers garbage, non-object and truncated JSON with a 400 in OpenAI format', async () => {
    for (const body of ['\u0000\u0001garbage', '[1,2,3]', '"text"', 'null', '{"model": "tiny", "prompt": "a"']) {
      const r = await raw('POST', '/v1/completions', body);
      expect(r.status).toBe(400);
      expect(error(r.body).type).toBe('invalid_request_error');
    }
    await stillServes();
  });

  it('refuses bodies over the limit with 413, declared or streamed in chunks', async () => {
    const big = JSON.stringify({ model: 'tiny', prompt: 'x'.repeat(10_000) });
    const declared = await raw('POST', '/v1/completions', big);
    expect(declared.status).toBe(413);
    expect(error(declared.body).code).toBe('request_too_large');
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/completions',
          headers: { 'Transfer-Encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(1000));
      req.end();
    });
    expect(chunked).toBe(413);
    await stillServes();
  });

  it('refuses bad sampling values and unsupported fields by name, and ignores unknown fields', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ max_tokens: -5 }, 'max_tokens'],
      [{ max_tokens: 1.5 }, 'max_tokens'],
      [{ temperature: 'hot' }, 'temperature'],
      [{ top_p: 0 }, 'top_p'],
      [{ n: 0 }, 'n'],
      [{ stop: [1, 2] }, 'stop'],
      [{ logit_bias: { '5': 100 } }, 'logit_bias'],
      [{ prompt: [] }, 'prompt'],
      [{ prompt: [3, -1] }, 'prompt[0]'],
      [{ model: 42 }, 'model'],
    ];
    for (const [fields, param] of cases) {
      const r = await raw('POST', '/v1/completions', JSON.stringify({ model: 'tiny', prompt: 'hi', ...fields }));
      expect(r.status, JSON.stringify(fields)).toBe(400);
      expect(error(r.body).param).toBe(param);
    }
    const unknown = await raw(
      'POST',
      '/v1/completions',
      JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 2, frobnicate: { deep: [1] }, __proto__: { x: 1 } }),
    );
    expect(unknown.status).toBe(200);
  });

  it('answers unknown routes with 404, wrong methods with 405 and bad messages with 400', async () => {
    expect((await raw('GET', '/v2/anything')).status).toBe(404);
    expect((await raw('GET', '/v1/chat/completions')).status).toBe(405);
    const r = await raw(
      'POST',
      '/v1/chat/completions',
      JSON.stringify({ model: 'tiny', messages: [{ role: 'wizard', content: 'hi' }] }),
    );
    expect(r.status).toBe(400);
    expect(error(r.body).param).toBe('messages[0].role');
  });

  it('survives bytes that are not HTTP at all', async () => {
    await new Promise<void>((resolve) => {
      const s = connect(port, '127.0.0.1', () => s.end('\u0016\u0003\u0001 not http at all\r\n\r\n'));
      s.on('data', () => undefined);
      s.on('close', () => resolve());
      s.on('error', () => resolve());
    });
    await stillServes();
  });

  it('survives clients that disconnect while queued and in the middle of a stream', async () => {
    const body = JSON.stringify({
      model: 'tiny',
      prompt: 'Turn 1:',
      max_tokens: 200,
      temperature: 0,
      stream: true,
      logprobs: 2,
    });
    // Gone before the answer: the request is sent, the socket destroyed at once.
    const early = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/completions',
      headers: { 'Content-Type': 'application/json' },
    });
    early.on('error', () => undefined);
    early.end(body, () => early.destroy());
    // Gone after the first chunk of the stream.
    const chunks = await new Promise<number>((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/completions',
          headers: { 'Content-Type': 'application/json' },
        },
        (res) => {
          let n = 0;
          res.on('data', () => {
            n++;
            req.destroy();
            resolve(n);
          });
        },
      );
      req.on('error', () => undefined);
      req.end(body);
    });
    expect(chunks).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 200));
    await stillServes();
    expect(logs.filter((l) => l.startsWith('500'))).toEqual([]);
  });
});
