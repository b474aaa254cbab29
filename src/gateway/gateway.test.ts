// The gateway with the official `openai` client over the shipped tiny model: what it records is what the engine
// sampled (checked by scoring the recorded ids with the engine), prompts are Qwen's rendering, and its limits hold.
import { Template } from '@huggingface/jinja';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sequenceBatch, type Engine } from '../engine/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { QWEN25_CHAT_TEMPLATE } from '../tokenizer/index.js';
import { Gateway } from './server.js';

let target: Awaited<ReturnType<typeof localServeTarget>>;
let gateway: Gateway;
const qwen = new Template(QWEN25_CHAT_TEMPLATE);
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'calc',
      description: 'Evaluate arithmetic.',
      parameters: { type: 'object', properties: { expr: { type: 'string' } } },
    },
  },
];

beforeAll(async () => {
  target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  gateway = new Gateway({ ...target, maxCallsPerEpisode: 3, maxBodyBytes: 4096 });
  await gateway.listen(0);
});
afterAll(async () => {
  await gateway.close();
});

const client = (baseURL: string): OpenAI => new OpenAI({ baseURL, apiKey: 'dummy', maxRetries: 0 });

/** The engine's own log p of each completion id after the prompt (teacher-forced). */
async function scored(prompt: number[], completion: number[]): Promise<number[]> {
  const seq = [...prompt, ...completion];
  const out = await target.engine.forward(sequenceBatch([seq]), { role: 'policy' });
  return Array.from(out.logprobs.slice(prompt.length, seq.length));
}

describe('the gateway', () => {
  it("records the ids the policy sampled and the prompt ids of Qwen's rendering, across two calls with a tool call between", async () => {
    const { baseUrl } = gateway.open('ep-exact');
    const openai = client(baseUrl);
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You add numbers with the calc tool.' },
      { role: 'user', content: 'What is 2+3?' },
    ];
    const first = await openai.chat.completions.create({
      model: 'anything',
      messages,
      tools,
      max_tokens: 12,
      temperature: 1,
      seed: 7,
    });
    // The agent calls the tool (written here: the tiny model has not learnt the format) and sends back the result.
    const call = { id: 'c1', type: 'function' as const, function: { name: 'calc', arguments: '{"expr":"2+3"}' } };
    const history: OpenAI.ChatCompletionMessageParam[] = [
      ...messages,
      { role: 'assistant', content: first.choices[0]!.message.content, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: '5' },
    ];
    const second = await openai.chat.completions.create({
      model: 'anything',
      messages: history,
      tools,
      max_tokens: 12,
      temperature: 1,
      seed: 8,
    });
    const log = gateway.finish('ep-exact');

    expect(log.calls.map((c) => c.index)).toEqual([0, 1]);
    const native = history.map((m) =>
      'tool_calls' in m && m.tool_calls
        ? { ...m, tool_calls: [{ ...call, function: { name: 'calc', arguments: { expr: '2+3' } } }] }
        : m,
    );
    const tok = target.tokenizer;
    expect(log.calls[0]!.promptIds).toEqual(tok.encode(qwen.render({ messages, tools, add_generation_prompt: true })));
    expect(log.calls[1]!.promptIds).toEqual(
      tok.encode(qwen.render({ messages: native, tools, add_generation_prompt: true })),
    );
    for (const [rec, res, seed] of [
      [log.calls[0]!, first, 7],
      [log.calls[1]!, second, 8],
    ] as const) {
      // The engine asked directly with the request's seed samples the recorded ids (a seeded call runs alone).
      const [direct] = await target.engine.generate([rec.promptIds], {
        maxNewTokens: 12,
        temperature: 1,
        topP: 1,
        topK: 0,
        stopTokenIds: [tok.eosTokenId],
        seed,
      });
      expect(rec.completionIds).toEqual(direct!.tokens);
      expect(rec.completionIds.length).toBeGreaterThan(0);
      expect(rec.logprobs).toHaveLength(rec.completionIds.length);
      // Ids re-tokenized from the text would not carry these log-probs: the engine agrees they are its samples.
      const ref = await scored(rec.promptIds, rec.completionIds);
      rec.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(ref[i]!, 3));
      const ids = rec.completionIds.at(-1) === tok.eosTokenId ? rec.completionIds.slice(0, -1) : rec.completionIds;
      expect(res.choices[0]!.message.content).toBe(tok.decode(ids));
      expect(res.usage?.completion_tokens).toBe(rec.completionIds.length);
    }
  });

  it('turns a <tool_call> the policy writes into OpenAI tool_calls', async () => {
    // A greedy reply of the tiny model is not a call; a completion forced through max_tokens is not either. So the
    // engine is wrapped to answer with a fixed call, which checks the response path (parsing covered in
    // qwen-tools.test.ts).
    const reply = target.tokenizer.encode(
      'ok\n<tool_call>\n{"name": "calc", "arguments": {"expr": "1+1"}}\n</tool_call>',
    );
    const fixed: Engine = {
      kind: 'fixed',
      generate: async (prompts) =>
        prompts.map(() => ({
          tokens: [...reply, target.tokenizer.eosTokenId],
          logprobs: reply.map(() => -1).concat([-1]),
          finishReason: 'stop' as const,
        })),
      forward: (batch, options) => target.engine.forward(batch, options),
    };
    const gw = new Gateway({ ...target, engine: fixed });
    await gw.listen(0);
    try {
      const { baseUrl } = gw.open('ep-call');
      const res = await client(baseUrl).chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'q' }],
        tools,
        max_tokens: 200,
      });
      expect(res.choices[0]!.finish_reason).toBe('tool_calls');
      expect(res.choices[0]!.message.content).toBe('ok');
      const calls = res.choices[0]!.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
      expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
        ['calc', { expr: '1+1' }],
      ]);
      // The same answer streamed: the call arrives whole in one delta.
      const stream = await client(baseUrl).chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'q' }],
        tools,
        max_tokens: 200,
        stream: true,
      });
      let text = '';
      let finish: string | null = null;
      const streamed: { id?: string; name?: string; args?: string }[] = [];
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta;
        text += d?.content ?? '';
        for (const t of d?.tool_calls ?? [])
          streamed[t.index] = { id: t.id, name: t.function?.name, args: t.function?.arguments };
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect([text, finish, streamed.map((c) => [c.name, JSON.parse(c.args!)])]).toEqual([
        'ok',
        'tool_calls',
        [['calc', { expr: '1+1' }]],
      ]);
      const log = gw.finish('ep-call');
      expect(log.calls.map((c) => c.completionIds)).toEqual([0, 1].map(() => [...reply, target.tokenizer.eosTokenId]));
    } finally {
      await gw.close();
    }
  });

  it('records a streamed call token-exactly and streams the text the ids decode to', async () => {
    const { baseUrl } = gateway.open('ep-stream');
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Turn 1: go' }];
    const stream = await client(baseUrl).chat.completions.create({
      model: 'm',
      messages,
      max_tokens: 10,
      temperature: 1,
      seed: 11,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    const [rec] = gateway.finish('ep-stream').calls;
    const tok = target.tokenizer;
    const [direct] = await target.engine.generate([rec!.promptIds], {
      maxNewTokens: 10,
      temperature: 1,
      topP: 1,
      topK: 0,
      stopTokenIds: [tok.eosTokenId],
      seed: 11,
    });
    expect(rec!.completionIds).toEqual(direct!.tokens);
    expect(rec!.promptIds).toEqual(
      tok.encode(tok.applyChatTemplate([{ role: 'user', content: 'Turn 1: go' }], { addGenerationPrompt: true })),
    ); // no tools: the model's own template, as ragen serve
    expect(text).toBe(
      tok.decode(rec!.completionIds.at(-1) === tok.eosTokenId ? rec!.completionIds.slice(0, -1) : rec!.completionIds),
    );
    expect(usage?.completion_tokens).toBe(rec!.completionIds.length);
  });

  it('takes one finite reward per episode on POST …/reward', async () => {
    const { rewardUrl } = gateway.open('ep-reward');
    const post = (body: unknown): Promise<Response> =>
      fetch(rewardUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ reward: 'high' })).status).toBe(400);
    expect((await post({ reward: null })).status).toBe(400);
    const ok = await post({ reward: 0.75 });
    expect(ok.status).toBe(200);
    const again = await post({ reward: 1 });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { message: string } }).error.message).toMatch(
      /already reported reward 0.75/,
    );
    expect(gateway.finish('ep-reward').reward).toBe(0.75);
    expect((await post({ reward: 1 })).status).toBe(404); // closed
  });

  it('answers unknown episodes, floods and oversized bodies with OpenAI errors, and keeps serving', async () => {
    const unknown = await fetch(
      `${gateway.open('ep-x').baseUrl.replace(/\/episodes\/[^/]+/, '/episodes/nope')}/chat/completions`,
      { method: 'POST', body: '{}' },
    );
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('episode_not_found');
    const { baseUrl } = gateway.open('ep-flood');
    const openai = client(baseUrl);
    const ask = () =>
      openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    await expect(
      openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(10_000) }] }),
    ).rejects.toMatchObject({ status: 413 });
    const bad = await fetch(`${baseUrl}/chat/completions`, { method: 'POST', body: '{"messages": [' });
    expect(bad.status).toBe(400);
    await ask(); // the two refused calls above count toward the episode's 3
    await expect(ask()).rejects.toMatchObject({ status: 429 });
    await expect(ask()).rejects.toMatchObject({ status: 429 });
    const log = gateway.finish('ep-flood');
    expect(log.calls).toHaveLength(1);
    expect(log.refusedCalls).toBe(2);
    // Still serving other episodes.
    const after = await client(gateway.open('ep-after').baseUrl).chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    expect(after.choices).toHaveLength(1);
    gateway.finish('ep-x');
    gateway.finish('ep-after');
    // A limit of its own for one episode.
    const one = client(gateway.open('ep-one', { maxCalls: 1 }).baseUrl);
    await one.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    await expect(
      one.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
    ).rejects.toMatchObject({ status: 429 });
    expect(gateway.finish('ep-one').refusedCalls).toBe(1);
  });
});
