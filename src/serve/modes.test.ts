// One OpenAI server, two modes: `ragen serve` at the root and the training gateway under a prefix per episode. A
// compatibility behaviour lands once and holds in both; the mode's hooks (prefix, transform, onCall) work on their own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../gateway/index.js';
import { ApiError } from '../util/index.js';
import { localServeTarget } from './load.js';
import { OpenAIServer, type AnsweredCall } from './server.js';
import { TINY_MODEL_DIR } from './testing.js';

let target: Awaited<ReturnType<typeof localServeTarget>>;
let serve: OpenAIServer;
let serveUrl = '';
let gateway: Gateway;

beforeAll(async () => {
  target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  serve = new OpenAIServer(target);
  serveUrl = (await serve.listen(0)).url;
  gateway = new Gateway(target);
  await gateway.listen(0);
});
afterAll(async () => {
  await serve.close();
  await gateway.close();
});

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

describe('one server, two modes', () => {
  it("answers the Responses API with a 404 naming setOpenAIAPI('chat_completions') in both modes", async () => {
    const { baseUrl } = gateway.open('resp');
    for (const url of [serveUrl, baseUrl]) {
      const r = await post(`${url}/responses`, { model: 'tiny', input: 'hi' });
      const body = (await r.json()) as { error: { message: string; code: string } };
      expect([r.status, body.error.code]).toEqual([404, 'unknown_route']);
      expect(body.error.message).toContain("setOpenAIAPI('chat_completions')");
    }
    expect(gateway.finish('resp').calls).toEqual([]);
  });

  it('returns the log-probs a chat call asks for in both modes, equal to the ones the gateway records', async () => {
    const { baseUrl } = gateway.open('lp');
    const request = { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, temperature: 0 };
    const answers = [];
    for (const url of [serveUrl, baseUrl]) {
      const r = await post(`${url}/chat/completions`, { ...request, logprobs: true });
      expect(r.status).toBe(200);
      answers.push((await r.json()) as { choices: { logprobs: { content: { logprob: number }[] } | null }[] });
    }
    const [rec] = gateway.finish('lp').calls;
    for (const a of answers) expect(a.choices[0]!.logprobs?.content.map((c) => c.logprob)).toEqual(rec!.logprobs);
  });

  it('streams log-probs per token in both modes', async () => {
    const { baseUrl } = gateway.open('lp-stream');
    const request = { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, temperature: 0 };
    const streamed: number[][] = [];
    for (const url of [serveUrl, baseUrl]) {
      const text = await (await post(`${url}/chat/completions`, { ...request, logprobs: true, stream: true })).text();
      const chunks = text
        .split('\n\n')
        .filter((e) => e.startsWith('data: {'))
        .map((e) => JSON.parse(e.slice(6)) as { choices: { logprobs: { content: { logprob: number }[] } | null }[] });
      streamed.push(chunks.flatMap((c) => (c.choices[0]?.logprobs?.content ?? []).map((x) => x.logprob)));
    }
    const [rec] = gateway.finish('lp-stream').calls;
    expect(streamed).toEqual([rec!.logprobs, rec!.logprobs]);
  });
});

describe('the mode hooks on their own', () => {
  it('serves under a prefix per scope, rewrites requests with the transform and reports each answer to onCall', async () => {
    const calls: [string, AnsweredCall][] = [];
    const scoped = new OpenAIServer<string>({
      ...target,
      prefix: {
        resolve: (path) => {
          const m = /^\/team\/(\w+)(\/.*)$/.exec(path);
          if (!m) throw new ApiError(404, 'no team', 'invalid_request_error', null, 'no_team');
          return { scope: m[1]!, rest: m[2]! };
        },
        admit: (team) => calls.filter(([t]) => t === team).length,
        label: (team) => `team ${team}`,
      },
      transform: (body, team) => ({
        body: { ...body, messages: [{ role: 'user', content: `from ${team}` }] },
        tools: false,
        answer: (text) => ({ content: text.toUpperCase(), toolCalls: [] }),
      }),
      onCall: (call, team) => calls.push([team, call]),
    });
    const { url } = await scoped.listen(0);
    const root = url.replace(/\/v1$/, '');
    try {
      const r = await post(`${root}/team/red/v1/chat/completions`, {
        model: 'tiny',
        messages: [{ role: 'user', content: 'ignored' }],
        max_tokens: 4,
        temperature: 0,
      });
      const body = (await r.json()) as { choices: { message: { content: string } }[] };
      const tok = target.tokenizer;
      expect(calls.map(([team, c]) => [team, c.index])).toEqual([['red', 0]]);
      const call = calls[0]![1];
      expect(call.promptIds).toEqual(
        tok.encode(tok.applyChatTemplate([{ role: 'user', content: 'from red' }], { addGenerationPrompt: true })),
      );
      expect(body.choices[0]!.message.content).toBe(call.text.toUpperCase());
      const outside = await post(`${root}/v1/chat/completions`, { model: 'tiny', messages: [] });
      expect([outside.status, ((await outside.json()) as { error: { code: string } }).error.code]).toEqual([
        404,
        'no_team',
      ]);
      expect((await fetch(`${root}/health`)).status).toBe(404); // no root routes beside a prefix
      const legacy = await post(`${root}/team/red/v1/completions`, { model: 'tiny', prompt: 'x', max_tokens: 1 });
      expect(legacy.status).toBe(200);
    } finally {
      await scoped.close();
    }
  });
});
