// The compact tool format (`ragen_tool_format: "compact"`): tools as one signature line each, calls as
// `<tool_call>name(arg=value)</tool_call>` with JSON values, read strictly; the gateway writes and reads it for a
// model whose tokenizer names it, and a reply sent back renders as the model wrote it (the merge rule needs that).
import { mkdtempSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenizer, readToolCallBlocks, toolCallText } from '../tokenizer/index.js';
import { lowerToolMessages, parseToolCalls, unparsedToolCall } from './qwen-tools.js';
import { toolDemoCalls } from './tool-demos.js';
import { scriptedGateway } from './testing.js';
import type { AgentOutcome } from './runner.js';
import { ScriptedEngine } from '../agent/testing.js';
import { gatewayMetrics } from '../train/agent-source.js';

const tools = [
  {
    type: 'function',
    function: {
      name: 'guess',
      description: 'Guess the hidden number.',
      parameters: {
        type: 'object',
        properties: { n: { type: 'integer' }, note: { type: 'string', description: 'why' } },
        required: ['n'],
        additionalProperties: false,
        $schema: 'http://json-schema.org/draft-07/schema#',
      },
      strict: true,
    },
  },
];

describe('the compact tool format', () => {
  it('writes the tools block as signature lines: types, optional parameters marked, no client noise', () => {
    const [system] = lowerToolMessages([{ role: 'user', content: 'q' }], tools, 'auto', 'compact') as {
      role: string;
      content: string;
    }[];
    expect(system!.role).toBe('system');
    const lines = system!.content.split('\n');
    expect(lines).toContain(
      'guess(n: integer, note?: {"type": "string", "description": "why"}) - Guess the hidden number.',
    );
    expect(system!.content).toContain('<tool_call>name(argument=value, ...)</tool_call>');
    expect(system!.content).not.toMatch(/\$schema|strict|additionalProperties|"name": <function-name>/);
  });

  it('writes a call as name(key=json, ...) and reads it back, values of every JSON kind', () => {
    const args = { n: 7, s: 'a, "b" = (c)', l: [1, [2, 3]], o: { k: { z: null } }, t: true, f: -1.5e-3 };
    const text = toolCallText({ name: 'do_it', arguments: args }, 'compact');
    expect(text).toBe(
      '<tool_call>do_it(n=7, s="a, \\"b\\" = (c)", l=[1, [2, 3]], o={"k": {"z": null}}, t=true, f=-0.0015)</tool_call>',
    );
    expect(readToolCallBlocks(text, 'compact')).toEqual([{ ok: true, name: 'do_it', arguments: args }]);
    expect(readToolCallBlocks('<tool_call>ping()</tool_call>', 'compact')).toEqual([
      { ok: true, name: 'ping', arguments: {} },
    ]);
    // Qwen's JSON call is not a compact call, and the other way round
    expect(readToolCallBlocks(toolCallText({ name: 'g', arguments: { n: 1 } }), 'compact')[0]!.ok).toBe(false);
    expect(readToolCallBlocks(text)[0]!.ok).toBe(false);
  });

  it('rejects what is not a call, saying why', () => {
    const reason = (body: string) => {
      const [b] = readToolCallBlocks(`<tool_call>${body}</tool_call>`, 'compact');
      return b!.ok ? 'ok' : b!.reason;
    };
    expect(reason('guess(7)')).toMatch(/"7" is not argument=value/);
    expect(reason('guess(n=7, n=8)')).toMatch(/`n` is given twice/);
    expect(reason('guess(n=seven)')).toMatch(/value of `n` is not JSON/);
    expect(reason('guess n=7')).toMatch(/not name\(argument=value/);
    expect(reason('guess(n=[1, 2)')).toMatch(/value of `n` is not JSON/);
    expect(reason('guess(n=7)')).toBe('ok');
  });

  it('the gateway parses compact calls, counts a garbled one as unparsed, and a reply sent back renders as written', () => {
    const reply = 'Thinking.\n<tool_call>guess(n=8)</tool_call>';
    const { content, calls } = parseToolCalls(reply, 'x', 'compact');
    expect(content).toBe('Thinking.');
    expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['guess', { n: 8 }]]);
    expect(unparsedToolCall(reply, 'compact')).toBe(false);
    expect(unparsedToolCall('<tool_call>guess(n=8</tool_call>', 'compact')).toBe(true);
    expect(unparsedToolCall(reply, 'qwen')).toBe(true); // the same reply is garbled for a Qwen-format model
    const [, , assistant] = lowerToolMessages(
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content, tool_calls: calls },
      ],
      tools,
      'auto',
      'compact',
    ) as { content: string }[];
    expect(assistant!.content).toBe(reply);
  });

  it('a tokenizer names its format in tokenizer_config.json; demos and prompts follow it; a bad name is refused', () => {
    const config = JSON.parse(readFileSync('models/guess-number-tiny/tokenizer_config.json', 'utf8')) as object;
    const tokenizerWith = (extra: Record<string, unknown>): string => {
      const dir = mkdtempSync(join(tmpdir(), 'compact-tok-'));
      cpSync('models/guess-number-tiny/tokenizer.json', join(dir, 'tokenizer.json'));
      writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, ...extra }));
      return dir;
    };
    for (const format of ['qwen', 'compact'] as const) {
      const tok = loadTokenizer(tokenizerWith({ ragen_tool_format: format }));
      expect(tok.toolFormat).toBe(format);
      const [first] = toolDemoCalls(tok, {
        messages: [{ role: 'user', content: 'Guess.' }],
        tools,
        steps: [{ name: 'guess', arguments: { n: 8 }, result: 'higher' }],
      });
      expect(first!.text).toBe(toolCallText({ name: 'guess', arguments: { n: 8 } }, format));
      expect(tok.decode(first!.promptIds).includes('guess(n: integer')).toBe(format === 'compact');
    }
    expect(() => loadTokenizer(tokenizerWith({ ragen_tool_format: 'xml' }))).toThrow(
      /`ragen_tool_format` = "xml" is not a tool format; give one of "qwen", "compact"/,
    );
  });
});

describe('the gateway over a compact-format model', () => {
  it('shows the policy compact tools, answers its compact call as tool_calls, and counts a garbled one as unparsed', async () => {
    const config = JSON.parse(readFileSync('models/guess-number-tiny/tokenizer_config.json', 'utf8')) as object;
    const dir = mkdtempSync(join(tmpdir(), 'compact-gw-'));
    cpSync('models/guess-number-tiny/tokenizer.json', join(dir, 'tokenizer.json'));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, ragen_tool_format: 'compact' }));
    const tokenizer = loadTokenizer(dir);
    const replies = ['<tool_call>guess(n=8)</tool_call><|im_end|>', '<tool_call>guess(n=8</tool_call><|im_end|>'];
    const engine = new ScriptedEngine(tokenizer, () => replies.shift()!);
    const gateway = await scriptedGateway(engine, tokenizer);
    expect(gateway.toolFormat).toBe('compact');
    try {
      const { baseUrl } = gateway.open('e1');
      const call = async () => {
        const res = await fetch(`${baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({
            model: 'policy',
            max_tokens: 32,
            messages: [{ role: 'user', content: 'Guess.' }],
            tools,
          }),
        });
        return (await res.json()) as {
          choices: { message: { tool_calls?: { function: { name: string; arguments: string } }[] } }[];
        };
      };
      const first = await call();
      expect(
        first.choices[0]!.message.tool_calls!.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      ).toEqual([['guess', { n: 8 }]]);
      expect((await call()).choices[0]!.message.tool_calls).toBeUndefined();
      const log = gateway.finish('e1');
      expect(tokenizer.decode(log.calls[0]!.promptIds)).toContain('guess(n: integer, note?:');
      const outcome = { log, reward: 0, status: 'ok' } as unknown as AgentOutcome;
      expect(gatewayMetrics([outcome], 0, gateway.toolFormat)['gateway/unparsed_tool_call_rate']).toBe(0.5);
      expect(gatewayMetrics([outcome], 0, 'qwen')['gateway/unparsed_tool_call_rate']).toBe(1);
    } finally {
      await gateway.close();
    }
  });
});
