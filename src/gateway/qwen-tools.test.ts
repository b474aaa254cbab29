// Lowering OpenAI tool messages to Qwen's format is checked against Qwen2.5's own chat template rendering the same
// conversation natively (tools, tool_calls with dict arguments, tool results), and call parsing on hand-written replies.
import { Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, QWEN25_CHAT_TEMPLATE } from '../tokenizer/index.js';
import { ApiError } from '../serve/index.js';
import { lowerToolMessages, parseToolCalls, pyJson, unparsedToolCall } from './qwen-tools.js';

const qwen = new Template(QWEN25_CHAT_TEMPLATE);
const chatml = new Template(CHATML_TEMPLATE);
const tools = [
  { type: 'function', function: { name: 'calc', description: 'Evaluate an arithmetic expression.', parameters: { type: 'object', properties: { expr: { type: 'string' } }, required: ['expr'] } } },
  { type: 'function', function: { name: 'note', description: 'Écrire une note.', parameters: { type: 'object', properties: { text: { type: 'string' } } } } },
];
// The conversation as an OpenAI client sends it: arguments are JSON strings.
const openaiMessages = [
  { role: 'user', content: 'What is 12*7, and 3+4?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'calc', arguments: '{"expr":"12*7"}' } }, { id: 'b', type: 'function', function: { name: 'calc', arguments: '{"expr": "3+4"}' } }] },
  { role: 'tool', tool_call_id: 'a', content: '84' },
  { role: 'tool', tool_call_id: 'b', content: '7' },
  { role: 'assistant', content: 'Noting it.', tool_calls: [{ id: 'c', type: 'function', function: { name: 'note', arguments: '{"text":"84 and 7"}' } }] },
  { role: 'tool', tool_call_id: 'c', content: 'ok' },
];
// The same conversation as Qwen's template expects it (arguments as objects, transformers' convention).
const nativeMessages = openaiMessages.map((m) =>
  'tool_calls' in m && m.tool_calls ? { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) } })) } : m,
);

describe("Qwen's tool format", () => {
  it("renders tools, calls and results exactly as Qwen2.5's template does, under Qwen's and a plain ChatML template", () => {
    for (const system of [[], [{ role: 'system', content: 'You are a calculator agent.' }]]) {
      const expected = qwen.render({ messages: [...system, ...nativeMessages], tools, add_generation_prompt: true });
      const lowered = lowerToolMessages([...system, ...openaiMessages], tools);
      expect(qwen.render({ messages: lowered, add_generation_prompt: true })).toBe(expected);
      expect(chatml.render({ messages: lowered, add_generation_prompt: true })).toBe(expected);
    }
  });

  it('leaves messages without tools as they are', () => {
    const plain = [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }];
    expect(lowerToolMessages(plain, undefined)).toEqual(plain);
  });

  it('writes JSON as Python does (the spacing the model saw)', () => {
    expect(pyJson({ a: 1, b: ['x', null, { c: true }] })).toBe('{"a": 1, "b": ["x", null, {"c": true}]}');
  });

  it('refuses a malformed tool or call with a 400 naming the field', () => {
    expect(() => lowerToolMessages([{ role: 'user', content: 'x' }], [{ type: 'function', function: {} }])).toThrow(/tools\[0\]/);
    const bad = [{ role: 'assistant', content: '', tool_calls: [{ id: 'a', type: 'function', function: { name: 'calc', arguments: '{not json' } }] }];
    try {
      lowerToolMessages(bad, tools);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).param).toBe('messages[0].tool_calls[0].function.arguments');
    }
  });

  it('parses well-formed calls out of a reply and keeps the text before them as content', () => {
    const reply = 'Let me compute.\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call>\n<tool_call>\n{"name": "note", "arguments": {"text": "hi"}}\n</tool_call>';
    const { content, calls } = parseToolCalls(reply, 'x');
    expect(content).toBe('Let me compute.');
    expect(calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['x-0', 'calc', { expr: '2+2' }],
      ['x-1', 'note', { text: 'hi' }],
    ]);
  });

  it('leaves malformed calls in the text (the model made a mistake, not the client)', () => {
    for (const reply of ['<tool_call>{"name": "calc", "arguments": </tool_call>', '<tool_call>{"arguments": {}}</tool_call>', 'no call here', '<tool_call>{"name": "calc", "arguments": [1]}</tool_call>']) {
      expect(parseToolCalls(reply, 'x')).toEqual({ content: reply, calls: [] });
    }
    expect(parseToolCalls('<tool_call>{"name": "calc", "arguments": {}}</tool_call>', 'x').content).toBeNull();
  });

  it('tells a reply with unparsed tool-call text from one with calls or plain content only', () => {
    const good = '<tool_call>\n{"name": "calc", "arguments": {"expr": "1"}}\n</tool_call>';
    for (const reply of [good, `${good}\n${good}`, 'Done: 4.', `Thinking.\n${good}`]) expect(unparsedToolCall(reply), reply).toBe(false);
    for (const reply of ['<tool_call>{"name": "calc", "arguments": </tool_call>', `${good}\n<tool_call>{"arguments": {}}</tool_call>`, '<tool_call>\n{"name": "calc"', '</totool_call>{"name": "calc"}', `${good}</tool_call>`]) {
      expect(unparsedToolCall(reply), reply).toBe(true);
    }
  });

  it('round-trips: a parsed reply sent back renders as the reply the model wrote', () => {
    const reply = 'Thinking.\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call>';
    const { content, calls } = parseToolCalls(reply, 'x');
    const [, assistant] = lowerToolMessages([{ role: 'user', content: 'q' }, { role: 'assistant', content, tool_calls: calls }], undefined) as { content: string }[];
    expect(assistant!.content).toBe(reply);
  });
});
