// Issue 38 item 1: what each real client sends, pinned. The three guess-number agents (Vercel AI SDK, OpenAI Agents
// SDK, LangChain.js) are run against a stand-in server that records their requests; the noise each one adds is
// asserted (so a client upgrade that changes it shows here), and the gateway renders every one of their calls to
// the same prompt token ids as the AI SDK's call: the tools say the same thing whatever the client wrote around them.
import { Agent, OpenAIProvider, Runner } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type Tokenizer } from '../../src/index.js';
import { ScriptedEngine } from '../../src/agent/testing.js';
import { TINY_MODEL_DIR } from '../../src/serve/testing.js';
import type { Gateway } from '../../src/gateway/index.js';
import { scriptedGateway } from '../../src/gateway/testing.js';
import { captureRequests, type CapturedRequest, type ExampleName } from './testing.js';

const SEED = 7; // hidden number 10: guesses 8 (higher), 12 (lower), 10 (correct) make three calls
const chatBodies = (requests: CapturedRequest[]) =>
  requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body!);

let tokenizer: Tokenizer;
let engine: ScriptedEngine;
let gateway: Gateway;
const logs: string[] = [];
const captured = new Map<ExampleName, Record<string, unknown>[]>();
beforeAll(async () => {
  tokenizer = loadTokenizer(TINY_MODEL_DIR);
  // two calls in one reply when the prompt says so (the parallel_tool_calls check), else a plain answer
  engine = new ScriptedEngine(tokenizer, (p) =>
    p.includes('twice')
      ? '<tool_call>\n{"name": "guess", "arguments": {"n": 1}}\n</tool_call>\n<tool_call>\n{"name": "guess", "arguments": {"n": 2}}\n</tool_call><|im_end|>'
      : 'ok<|im_end|>',
  );
  gateway = await scriptedGateway(engine, tokenizer, { maxTokens: 256, log: (l) => logs.push(l) });
  for (const name of ['ai-sdk', 'openai-agents', 'langchain'] as const) {
    const { requests, stderr, code } = await captureRequests(name, SEED, [8, 12, 10]);
    expect([name, code, stderr]).toEqual([name, 0, '']);
    captured.set(name, chatBodies(requests));
    expect(requests.at(-1)).toEqual({ method: 'POST', path: '/reward', body: { reward: 1 } });
  }
}, 120_000);
afterAll(async () => {
  await gateway.close();
});

/** The prompt ids the gateway records for `body` sent as one call of a fresh episode (and the call's HTTP status). */
async function gatewayPrompt(
  body: unknown,
  id: string,
): Promise<{ status: number; promptIds: number[] | undefined; json: Record<string, unknown> }> {
  const { baseUrl } = gateway.open(id);
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, promptIds: gateway.finish(id).calls[0]?.promptIds, json };
}

describe('item 1: the request shapes of real agent frameworks', () => {
  it('the AI SDK (ai 7): tool_choice "auto", content null with tool_calls, the schema as given', () => {
    const bodies = captured.get('ai-sdk')!;
    expect(bodies).toHaveLength(3);
    expect(bodies[0]).toMatchObject({ model: 'policy', max_tokens: 64, tool_choice: 'auto' });
    expect((bodies[0]!['tools'] as unknown[])[0]).toEqual({
      type: 'function',
      function: {
        name: 'guess',
        description: 'Guess the hidden number; answers higher, lower or correct.',
        parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      },
    });
    expect((bodies[1]!['messages'] as unknown[])[1]).toMatchObject({ role: 'assistant', content: null });
  });

  it('the OpenAI Agents SDK (0.20): strict, $schema, additionalProperties, the zod bounds, stream false', () => {
    const bodies = captured.get('openai-agents')!;
    expect(bodies).toHaveLength(3);
    expect(bodies[0]).toMatchObject({ model: 'policy', max_tokens: 64, stream: false });
    expect((bodies[0]!['tools'] as unknown[])[0]).toEqual({
      type: 'function',
      function: {
        name: 'guess',
        description: 'Guess the hidden number; answers higher, lower or correct.',
        parameters: {
          $schema: 'http://json-schema.org/draft-07/schema#',
          type: 'object',
          properties: { n: { type: 'integer', minimum: 1, maximum: 16 } },
          required: ['n'],
          additionalProperties: false,
        },
        strict: true,
      },
    });
    expect((bodies[1]!['messages'] as unknown[])[1]).toMatchObject({ role: 'assistant', content: null });
  });

  it('LangChain.js (@langchain/openai 1.6): stream false, $schema, additionalProperties, the bounds, content "" with tool_calls', () => {
    const bodies = captured.get('langchain')!;
    expect(bodies).toHaveLength(3);
    expect(bodies[0]).toMatchObject({ model: 'policy', max_tokens: 64, stream: false });
    expect((bodies[0]!['tools'] as { function: { parameters: unknown } }[])[0]!.function.parameters).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { n: { type: 'integer', minimum: 1, maximum: 16 } },
      required: ['n'],
      additionalProperties: false,
    });
    expect((bodies[1]!['messages'] as unknown[])[1]).toMatchObject({ role: 'assistant', content: '' });
    expect((bodies[1]!['messages'] as unknown[])[2]).toMatchObject({ role: 'tool', name: 'guess', content: 'higher' });
  });

  it("the gateway accepts every call of every client and renders each to the AI SDK call's prompt ids", async () => {
    const reference: number[][] = [];
    for (const [k, body] of captured.get('ai-sdk')!.entries())
      reference.push((await gatewayPrompt(body, `ref-${k}`)).promptIds!);
    expect(reference.map((ids) => ids.length)).toEqual([...reference.map((ids) => ids.length)].sort((a, b) => a - b)); // each call's prompt is longer
    for (const name of ['openai-agents', 'langchain'] as const) {
      for (const [k, body] of captured.get(name)!.entries()) {
        const { status, promptIds, json } = await gatewayPrompt(body, `${name}-${k}`);
        expect([name, k, status, json['error']]).toEqual([name, k, 200, undefined]);
        expect(promptIds, `${name} call ${k}`).toEqual(reference[k]);
      }
    }
    expect(tokenizer.decode(reference[0]!)).not.toMatch(/\$schema|strict|additionalProperties|minimum/);
  });
});

describe('item 1: what the gateway does with tool_choice, parallel_tool_calls and the Responses API', () => {
  const body = (extra: Record<string, unknown>) => ({ ...captured.get('openai-agents')![0], ...extra });

  it('tool_choice "none" shows the policy no tools and returns no calls; "required" and a named function are a 400 saying why', async () => {
    const auto = await gatewayPrompt(body({}), 'tc-auto');
    const none = await gatewayPrompt(
      body({ tool_choice: 'none', messages: [{ role: 'user', content: 'Guess twice.' }] }),
      'tc-none',
    );
    expect(none.status).toBe(200);
    expect(tokenizer.decode(none.promptIds!)).not.toContain('<tools>');
    expect(tokenizer.decode(auto.promptIds!)).toContain('<tools>');
    // the reply holds two well-formed blocks: with no tools offered they are text, not calls
    const message = (none.json['choices'] as { message: Record<string, unknown> }[])[0]!.message;
    expect([message['tool_calls'], typeof message['content']]).toEqual([undefined, 'string']);
    for (const tool_choice of ['required', { type: 'function', function: { name: 'guess' } }]) {
      const r = await gatewayPrompt(body({ tool_choice }), 'tc-required');
      expect(r.status).toBe(400);
      expect((r.json['error'] as { message: string; param: string }).param).toBe('tool_choice');
      expect((r.json['error'] as { message: string }).message).toMatch(/cannot be enforced by the training gateway/);
      expect(r.promptIds).toBeUndefined();
    }
  });

  it('parallel_tool_calls true or false is accepted (false with several calls returns them all and logs it); anything else is a 400', async () => {
    for (const parallel of [true, false]) {
      const r = await gatewayPrompt(
        body({ parallel_tool_calls: parallel, max_tokens: 256, messages: [{ role: 'user', content: 'Guess twice.' }] }),
        `par-${parallel}`,
      );
      expect(r.status).toBe(200);
      expect((r.json['choices'] as { message: { tool_calls: unknown[] } }[])[0]!.message.tool_calls).toHaveLength(2);
    }
    expect(logs.filter((l) => l.includes('parallel_tool_calls is false but the policy wrote 2 calls'))).toHaveLength(1);
    const bad = await gatewayPrompt(body({ parallel_tool_calls: 'yes' }), 'par-bad');
    expect([bad.status, (bad.json['error'] as { param: string }).param]).toEqual([400, 'parallel_tool_calls']);
  });

  it("the Agents SDK left on its default (the Responses API) is told to call setOpenAIAPI('chat_completions')", async () => {
    const { baseUrl } = gateway.open('responses');
    try {
      const runner = new Runner({
        modelProvider: new OpenAIProvider({ apiKey: 'ragen-gateway', baseURL: baseUrl, useResponses: true }),
        tracingDisabled: true,
      });
      await expect(runner.run(new Agent({ name: 'a', model: 'policy' }), 'hi')).rejects.toThrow(
        /404.*setOpenAIAPI\('chat_completions'\)/,
      );
    } finally {
      expect(gateway.finish('responses').calls).toHaveLength(0);
    }
  });
});
