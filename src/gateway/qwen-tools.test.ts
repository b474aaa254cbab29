// Lowering OpenAI tool messages to Qwen's format is checked against Qwen2.5's own chat template rendering the same
// conversation natively (tools, tool_calls with dict arguments, tool results), and call parsing on hand-written
// replies.
import { Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, QWEN25_CHAT_TEMPLATE } from '../tokenizer/index.js';
import { ApiError } from '../serve/index.js';
import { lowerToolMessages, parseToolCalls, pyJson, toolChoiceOf, unparsedToolCall } from './qwen-tools.js';

const qwen = new Template(QWEN25_CHAT_TEMPLATE);
const chatml = new Template(CHATML_TEMPLATE);
const tools = [
  {
    type: 'function',
    function: {
      name: 'calc',
      description: 'Evaluate an arithmetic expression.',
      parameters: { type: 'object', properties: { expr: { type: 'string' } }, required: ['expr'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'note',
      description: 'Écrire une note.',
      parameters: { type: 'object', properties: { text: { type: 'string' } } },
    },
  },
];
// The conversation as an OpenAI client sends it: arguments are JSON strings.
const openaiMessages = [
  { role: 'user', content: 'What is 12*7, and 3+4?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'a', type: 'function', function: { name: 'calc', arguments: '{"expr":"12*7"}' } },
      { id: 'b', type: 'function', function: { name: 'calc', arguments: '{"expr": "3+4"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'a', content: '84' },
  { role: 'tool', tool_call_id: 'b', content: '7' },
  {
    role: 'assistant',
    content: 'Noting it.',
    tool_calls: [{ id: 'c', type: 'function', function: { name: 'note', arguments: '{"text":"84 and 7"}' } }],
  },
  { role: 'tool', tool_call_id: 'c', content: 'ok' },
];
// The same conversation as Qwen's template expects it (arguments as objects, transformers' convention).
const nativeMessages = openaiMessages.map((m) =>
  'tool_calls' in m && m.tool_calls
    ? {
        ...m,
        tool_calls: m.tool_calls.map((c) => ({
          ...c,
          function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) },
        })),
      }
    : m,
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
    const plain = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'u' },
    ];
    expect(lowerToolMessages(plain, undefined)).toEqual(plain);
  });

  it('writes JSON as Python does (the spacing the model saw)', () => {
    expect(pyJson({ a: 1, b: ['x', null, { c: true }] })).toBe('{"a": 1, "b": ["x", null, {"c": true}]}');
  });

  it('refuses a malformed tool or call with a 400 naming the field', () => {
    expect(() => lowerToolMessages([{ role: 'user', content: 'x' }], [{ type: 'function', function: {} }])).toThrow(
      /tools\[0\]/,
    );
    const bad = [
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'calc', arguments: '{not json' } }],
      },
    ];
    try {
      lowerToolMessages(bad, tools);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).param).toBe('messages[0].tool_calls[0].function.arguments');
    }
  });

  it('parses well-formed calls out of a reply and keeps the text before them as content', () => {
    const reply =
      'Let me compute.\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call>\n<tool_call>\n{"name": "note", "arguments": {"text": "hi"}}\n</tool_call>';
    const { content, calls } = parseToolCalls(reply, 'x');
    expect(content).toBe('Let me compute.');
    expect(calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['x-0', 'calc', { expr: '2+2' }],
      ['x-1', 'note', { text: 'hi' }],
    ]);
  });

  it('leaves malformed calls in the text (the model made a mistake, not the client)', () => {
    for (const reply of [
      '<tool_call>{"name": "calc", "arguments": </tool_call>',
      '<tool_call>{"arguments": {}}</tool_call>',
      'no call here',
      '<tool_call>{"name": "calc", "arguments": [1]}</tool_call>',
    ]) {
      expect(parseToolCalls(reply, 'x')).toEqual({ content: reply, calls: [] });
    }
    expect(parseToolCalls('<tool_call>{"name": "calc", "arguments": {}}</tool_call>', 'x').content).toBeNull();
  });

  it('tells a reply with unparsed tool-call text from one with calls or plain content only', () => {
    const good = '<tool_call>\n{"name": "calc", "arguments": {"expr": "1"}}\n</tool_call>';
    for (const reply of [good, `${good}\n${good}`, 'Done: 4.', `Thinking.\n${good}`])
      expect(unparsedToolCall(reply), reply).toBe(false);
    for (const reply of [
      '<tool_call>{"name": "calc", "arguments": </tool_call>',
      `${good}\n<tool_call>{"arguments": {}}</tool_call>`,
      '<tool_call>\n{"name": "calc"',
      '</totool_call>{"name": "calc"}',
      `${good}</tool_call>`,
    ]) {
      expect(unparsedToolCall(reply), reply).toBe(true);
    }
  });

  it('round-trips: a parsed reply sent back renders as the reply the model wrote', () => {
    const reply = 'Thinking.\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call>';
    const { content, calls } = parseToolCalls(reply, 'x');
    const [, assistant] = lowerToolMessages(
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content, tool_calls: calls },
      ],
      undefined,
    ) as { content: string }[];
    expect(assistant!.content).toBe(reply);
  });
});

/** The system turn the gateway writes for `tools` (the tools block is all of it when no system message is given). */
const systemOf = (tools: unknown[], toolChoice?: 'auto' | 'none'): string =>
  (lowerToolMessages([{ role: 'user', content: 'q' }], tools, toolChoice)[0] as { content: string }).content;
const fn = (parameters: unknown, extra: Record<string, unknown> = {}) => ({
  type: 'function',
  function: { name: 'f', description: 'd', parameters, ...extra },
});

describe("item 1: tools rendered the way Qwen's template and transformers' tool schemas write them", () => {
  // The `guess` tool as three real clients send it (captured from @openai/agents 0.20, @langchain/openai 1.6 and
  // ai 7 / @ai-sdk/openai 4 by examples/agents/request-shapes.test.ts), written out so this test needs no network.
  const aiSdk = {
    type: 'function',
    function: {
      name: 'guess',
      description: 'Guess the hidden number; answers higher, lower or correct.',
      parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    },
  };
  const agentsSdk = {
    type: 'function',
    function: {
      name: 'guess',
      description: aiSdk.function.description,
      parameters: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { n: { type: 'integer', minimum: 1, maximum: 16 } },
        required: ['n'],
        additionalProperties: false,
      },
      strict: true,
    },
  };
  const langchain = {
    type: 'function',
    function: {
      name: 'guess',
      description: aiSdk.function.description,
      parameters: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { n: { type: 'integer', minimum: 1, maximum: 16 } },
        required: ['n'],
        additionalProperties: false,
      },
    },
  };

  it("the Agents SDK's and LangChain's guess tool render as the AI SDK's: no $schema, strict, additionalProperties or bounds", () => {
    const expected = systemOf([aiSdk]);
    expect(expected).toContain(
      '\n{"type": "function", "function": {"name": "guess", "description": "Guess the hidden number; answers higher, lower or correct.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}\n</tools>',
    );
    expect(systemOf([agentsSdk])).toBe(expected);
    expect(systemOf([langchain])).toBe(expected);
    // key order is the gateway's, not the client's
    const shuffled = {
      function: {
        parameters: { required: ['n'], properties: { n: { type: 'integer' } }, type: 'object' },
        strict: false,
        description: aiSdk.function.description,
        name: 'guess',
      },
      type: 'function',
    };
    expect(systemOf([shuffled])).toBe(expected);
  });

  it('keeps type, enum, items, properties, required, anyOf and nullable with the description last, as get_json_schema writes them', () => {
    // transformers' get_json_schema of `def f(unit: str, xs: list[int], y: int | None = None)` with a docstring and
    // `(choices: ["c", "f"])`, in its key order; the same schema as zod and Pydantic-style clients send it (titles,
    // a default, a format, nullable as a type array and as a null alternative, const for a one-value enum).
    const transformers = {
      type: 'object',
      properties: {
        unit: { type: 'string', enum: ['c', 'f'], description: 'The unit' },
        xs: { type: 'array', items: { type: 'integer' }, description: 'Values' },
        y: { type: 'integer', nullable: true, description: 'Extra' },
      },
      required: ['unit', 'xs'],
    };
    const noisy = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: 'Args',
      type: 'object',
      additionalProperties: false,
      required: ['unit', 'xs'],
      properties: {
        unit: { description: 'The unit', title: 'Unit', type: 'string', enum: ['c', 'f'], default: 'c' },
        xs: {
          description: 'Values',
          type: 'array',
          minItems: 1,
          items: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
        },
        y: { anyOf: [{ type: 'integer', format: 'int32' }, { type: 'null' }], description: 'Extra' },
      },
    };
    expect(systemOf([fn(noisy)])).toBe(systemOf([fn(transformers)]));
    expect(
      systemOf([fn({ type: 'object', properties: { y: { type: ['integer', 'null'] }, k: { const: 'x' } } })]),
    ).toContain('"properties": {"y": {"type": "integer", "nullable": true}, "k": {"enum": ["x"]}}');
  });

  it('writes a function without parameters as transformers does, and leaves out an empty description and required list', () => {
    expect(systemOf([{ type: 'function', function: { name: 'now', description: '' } }])).toContain(
      '\n{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}\n',
    );
    expect(systemOf([fn({ type: 'object', properties: {}, required: [], additionalProperties: false })])).toContain(
      '"parameters": {"type": "object", "properties": {}}}}',
    );
  });

  it('inlines local $refs ($defs, definitions), stops a recursive one at its type, and refuses a remote one with a 400 naming the tool', () => {
    const withDefs = {
      type: 'object',
      properties: { p: { $ref: '#/$defs/Point', description: 'Where' } },
      $defs: { Point: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } },
    };
    expect(systemOf([fn(withDefs)])).toContain(
      '"properties": {"p": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"], "description": "Where"}}',
    );
    expect(
      systemOf([
        fn({ type: 'object', properties: { p: { $ref: '#/definitions/P' } }, definitions: { P: { type: 'string' } } }),
      ]),
    ).toContain('"properties": {"p": {"type": "string"}}');
    const tree = {
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
      $defs: { Node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/Node' } } } } },
    };
    expect(systemOf([fn(tree)])).toContain(
      '"properties": {"root": {"type": "object", "properties": {"kids": {"type": "array", "items": {"type": "object"}}}}}',
    );
    for (const [ref, why] of [
      ['https://example.com/s.json', /is not local/],
      ['#/$defs/Nope', /points at nothing/],
    ] as const) {
      try {
        systemOf([fn({ type: 'object', properties: { p: { $ref: ref } } })]);
        expect.unreachable();
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).param).toBe('tools[0].function.parameters');
        expect((err as ApiError).message).toMatch(why);
        expect((err as ApiError).message).toContain('(f)');
      }
    }
  });

  it('tool_choice: auto and none are honoured (none shows no tools, keeps the calls in the history); required and a named function are refused saying why', () => {
    expect(toolChoiceOf(undefined)).toBe('auto');
    expect(toolChoiceOf(null)).toBe('auto');
    expect(toolChoiceOf('auto')).toBe('auto');
    expect(toolChoiceOf('none')).toBe('none');
    const history = [
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'guess', arguments: '{"n":8}' } }],
      },
      { role: 'tool', tool_call_id: 'a', content: 'higher' },
    ];
    const none = lowerToolMessages(history, [aiSdk], 'none') as { role: string; content: string }[];
    expect(none.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(none[1]!.content).toBe('<tool_call>\n{"name": "guess", "arguments": {"n": 8}}\n</tool_call>');
    expect(JSON.stringify(none)).not.toContain('<tools>');
    for (const choice of ['required', { type: 'function', function: { name: 'guess' } }]) {
      expect(() => toolChoiceOf(choice)).toThrow(/cannot be enforced by the training gateway.*send "auto"/);
    }
    expect(() => toolChoiceOf('any')).toThrow(/tool_choice.*"auto", "none", "required"/);
  });

  it('an assistant turn with content "" or null and tool_calls renders as Qwen writes a call with no text', () => {
    const call = [{ id: 'a', type: 'function', function: { name: 'guess', arguments: '{"n":8}' } }];
    const render = (content: unknown) =>
      (
        lowerToolMessages(
          [
            { role: 'user', content: 'q' },
            { role: 'assistant', content, tool_calls: call },
          ],
          [aiSdk],
        ) as { content: string }[]
      )[2]!.content;
    expect(render('')).toBe('<tool_call>\n{"name": "guess", "arguments": {"n": 8}}\n</tool_call>');
    expect(render(null)).toBe(render(''));
    expect(render([])).toBe(render(''));
  });
});
