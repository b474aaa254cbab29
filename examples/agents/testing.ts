// Test helpers shared by the guess-number examples' tests: a scripted policy that plays binary search in a tool
// format, an engine that keeps what it sampled, each example's command, and a stand-in server that records requests.
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Generation, SamplingParams } from '../../src/engine/index.js';
import { ScriptedEngine } from '../../src/agent/testing.js';
import { toolCallText, type ToolFormatName } from '../../src/tokenizer/index.js';
import { MAX_NUMBER } from './guess-number-ai-sdk/task.mjs';

/** The three guess-number agents: the same task written with each framework. */
export const EXAMPLES = {
  'ai-sdk': join(import.meta.dirname, 'guess-number-ai-sdk', 'agent.mjs'),
  'openai-agents': join(import.meta.dirname, 'guess-number-openai-agents', 'agent.mjs'),
  langchain: join(import.meta.dirname, 'guess-number-langchain', 'agent.mjs'),
} as const;
export type ExampleName = keyof typeof EXAMPLES;

/** `node <agent.mjs>` for the gateway's runner. */
export const commandOf = (name: ExampleName): string => `node ${JSON.stringify(EXAMPLES[name])}`;

/**
 * Binary search read off the prompt (the guesses in its tool calls, the answers in its tool responses), its next guess
 * written as a call in `format`.
 */
export function binarySearchPolicy(prompt: string, format: ToolFormatName = 'qwen'): string {
  const call = format === 'compact' ? /guess\(n=(\d+)\)/g : /"arguments": \{"n": (\d+)\}/g;
  const guesses = [...prompt.matchAll(call)].map((m) => Number(m[1]));
  const answers = [...prompt.matchAll(/<tool_response>\n(\w+)\n<\/tool_response>/g)].map((m) => m[1]);
  let lo = 1;
  let hi = MAX_NUMBER;
  guesses.forEach((g, i) => {
    if (answers[i] === 'higher') lo = g + 1;
    if (answers[i] === 'lower') hi = g - 1;
  });
  return `${toolCallText({ name: 'guess', arguments: { n: Math.floor((lo + hi) / 2) } }, format)}<|im_end|>`;
}

/** A call with the last character of its body removed: JSON or `name(...)` that no longer parses. */
export const garbleCall = (reply: string): string => reply.replace(/[})](\s*<\/tool_call>)/, '$1');

/** A ScriptedEngine that keeps what it sampled, in order. */
export class RecordingEngine extends ScriptedEngine {
  sampled: Generation[] = [];
  override async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    const out = await super.generate(prompts, params);
    this.sampled.push(...out);
    return out;
  }
}

/** One request a client sent to the stand-in. */
export interface CapturedRequest {
  method: string;
  path: string;
  body: Record<string, unknown> | null;
}

/**
 * Run one example against a stand-in OpenAI server that records every request and answers chat calls with
 * `guesses` in turn as `guess` tool calls (OpenAI's wire format), then with text; the reward URL answers ok.
 */
export async function captureRequests(
  name: ExampleName,
  seed: number,
  guesses: readonly number[],
): Promise<{ requests: CapturedRequest[]; stderr: string; code: number }> {
  const requests: CapturedRequest[] = [];
  let chats = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString('utf8')));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        body: text ? (JSON.parse(text) as Record<string, unknown>) : null,
      });
      res.setHeader('Content-Type', 'application/json');
      if (req.url !== '/v1/chat/completions') return void res.end('{"ok": true}');
      const n = guesses[chats++];
      const message =
        n === undefined
          ? { role: 'assistant', content: 'I give up.' }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: `call_${chats}`,
                  type: 'function',
                  function: { name: 'guess', arguments: JSON.stringify({ n }) },
                },
              ],
            };
      res.end(
        JSON.stringify({
          id: `c${chats}`,
          object: 'chat.completion',
          created: 0,
          model: 'policy',
          choices: [{ index: 0, message, finish_reason: n === undefined ? 'stop' : 'tool_calls' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const env = {
      ...process.env,
      OPENAI_BASE_URL: `${base}/v1`,
      OPENAI_API_KEY: 'ragen-gateway',
      RAGEN_SEED: String(seed),
      RAGEN_EPISODE: 'capture',
      RAGEN_REWARD_URL: `${base}/reward`,
    };
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((ok) => {
      execFile('node', [EXAMPLES[name]], { env, timeout: 60_000 }, (err, _out, stderr) =>
        ok({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    return { requests, stderr, code };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
}
