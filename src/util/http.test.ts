// The shared node:http helpers: body limits, the two error forms, 500s that name the server, errors mid-stream,
// the client-gone signal, and a close that does not wait for open streams.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  EventStream,
  clientGone,
  closeServer,
  httpServer,
  listen,
  readJson,
  sendJson,
  type FailurePolicy,
} from './http.js';

const servers: ReturnType<typeof httpServer>[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await closeServer(s);
});

async function start(
  handle: Parameters<typeof httpServer>[0],
  policy: Partial<FailurePolicy> = {},
): Promise<{ url: string; lines: string[] }> {
  const lines: string[] = [];
  const server = httpServer(handle, { form: 'openai', name: 'The test server', log: (l) => lines.push(l), ...policy });
  servers.push(server);
  return { url: `http://127.0.0.1:${await listen(server, 0, '127.0.0.1')}`, lines };
}

/** POST `body` sent in chunks without a Content-Length (so only the byte count can catch it). */
function chunked(url: string, parts: string[]): Promise<{ status: number; body: string; connection: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'Transfer-Encoding': 'chunked' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, connection: String(res.headers.connection) }));
    });
    req.on('error', reject);
    for (const p of parts) req.write(p);
    req.end();
  });
}

describe('httpServer and readJson', () => {
  it('refuses a body over the limit with a 413 naming the setting, declared or counted, and closes the connection', async () => {
    const { url } = await start(async (req, res) => sendJson(res, 200, await readJson(req, 64, ' (--max-body-bytes)')));
    const declared = await fetch(url, { method: 'POST', body: 'x'.repeat(100) });
    const body = (await declared.json()) as { error: { code: string; message: string } };
    expect([declared.status, body.error.code]).toEqual([413, 'request_too_large']);
    expect(body.error.message).toMatch(/limit of 64 bytes \(--max-body-bytes\)/);
    const counted = await chunked(url, ['{"a": "', 'y'.repeat(40), 'z'.repeat(40), '"}']);
    expect([counted.status, counted.connection]).toEqual([413, 'close']);
    const ok = await chunked(url, ['{"a": ', '1}']);
    expect([ok.status, JSON.parse(ok.body)]).toEqual([200, { a: 1 }]);
  });

  it('logs size refusals in one line only where the server asks for it', async () => {
    const handle = async (req: Parameters<Parameters<typeof httpServer>[0]>[0]) => void (await readJson(req, 8));
    const quiet = await start(handle);
    const loud = await start(handle, { logRefused: true });
    for (const { url } of [quiet, loud])
      expect((await fetch(url, { method: 'POST', body: '[1,2,3,4,5]' })).status).toBe(413);
    expect(quiet.lines).toEqual([]);
    expect(loud.lines).toEqual(["413: The request body is 11 bytes or more, over this server's limit of 8 bytes."]);
  });

  it('answers bad JSON with a 400 in OpenAI form, or as {"error": message} for a plain server', async () => {
    const handle = async (req: Parameters<Parameters<typeof httpServer>[0]>[0]) => void (await readJson(req, 1024));
    const openai = await start(handle);
    const plain = await start(handle, { form: 'plain' });
    const a = await fetch(openai.url, { method: 'POST', body: '{"messages": [' });
    const b = await fetch(plain.url, { method: 'POST', body: '{"messages": [' });
    expect([a.status, ((await a.json()) as { error: { code: string } }).error.code]).toEqual([400, 'invalid_json']);
    const p = (await b.json()) as { error: string };
    expect([b.status, typeof p.error]).toEqual([400, 'string']);
    expect(p.error).toMatch(/not valid JSON/);
  });

  it('turns a thrown bug into a 500 naming the server and logs its stack, and keeps serving', async () => {
    let calls = 0;
    const seen: unknown[] = [];
    const { url, lines } = await start(
      (_req, res) => {
        if (calls++ === 0) throw new Error('disk on fire');
        sendJson(res, 200, {});
      },
      { onError: (e) => seen.push(e) },
    );
    const r = await fetch(url);
    const body = (await r.json()) as { error: { message: string; type: string } };
    expect([r.status, body.error.type]).toEqual([500, 'server_error']);
    expect(body.error.message).toBe('The test server failed on this request: disk on fire');
    expect(lines.join('\n')).toMatch(/500: Error: disk on fire\n\s+at /);
    expect(seen).toHaveLength(1);
    expect((await fetch(url)).status).toBe(200);
  }, 10_000);

  it('ends a started event stream with the error as its last event', async () => {
    const { url } = await start((_req, res) => {
      const events = new EventStream(res).open();
      events.send({ n: 1 });
      throw new ApiError(400, 'bad step', 'invalid_request_error', 'x');
    });
    const text = await (await fetch(url)).text();
    expect(text).toBe(
      'data: {"n":1}\n\ndata: {"error":{"message":"bad step","type":"invalid_request_error","param":"x","code":null}}\n\n',
    );
  });
});

describe('clientGone and closeServer', () => {
  it('aborts the signal when the client leaves before the reply, and not after a reply', async () => {
    const signals: AbortSignal[] = [];
    const { url } = await start(async (req, res) => {
      const signal = clientGone(res);
      signals.push(signal);
      if (req.url === '/quick') return sendJson(res, 200, {});
      await new Promise((r) => setTimeout(r, 300));
      sendJson(res, 200, {});
    });
    await fetch(`${url}/quick`);
    const abort = new AbortController();
    const slow = fetch(`${url}/slow`, { signal: abort.signal }).catch(() => 'gone');
    await new Promise((r) => setTimeout(r, 50));
    abort.abort();
    expect(await slow).toBe('gone');
    await new Promise((r) => setTimeout(r, 50));
    expect(signals.map((s) => s.aborted)).toEqual([false, true]);
  });

  it('closes a server with an open event stream at once', async () => {
    const { url } = await start((_req, res) => void new EventStream(res).open(2000));
    const res = await fetch(url);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('retry: 2000\n\n');
    const t0 = performance.now();
    await closeServer(servers.pop()!);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});
