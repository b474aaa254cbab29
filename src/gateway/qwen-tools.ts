// Tools in Qwen's chat format: OpenAI `tools`, assistant `tool_calls` and `tool` results lowered to the plain
// messages Qwen2.5's chat template would write, and `<tool_call>{json}</tool_call>` in a reply parsed back into calls.
import {
  promptTool,
  pyJson,
  readToolCall,
  toolCallText as callText,
  toolResponseText,
  toolsSystemText,
  type ChatMessage,
  type ToolFormatName,
} from '../tokenizer/index.js';
import type { ToolCall, Transformed } from '../serve/index.js';
import { ApiError, badParam, preview } from '../util/index.js';
import { ToolHold } from './stream.js';

// The format's text pieces live in src/tokenizer (the MCP env writes the same tools block); re-exported for the
// gateway's users, with the reply's call type (serve's).
export { callText, pyJson, toolsSystemText, type ToolCall };

/** Qwen2.5's system prompt when tools are given and the messages have none. */
export const QWEN_DEFAULT_SYSTEM = 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.';

/**
 * The gateway's request transform (the tool-call lowering): `tools`, `tool_choice` and `parallel_tool_calls` checked
 * and written into the messages (`lowerToolMessages`) of the body the OpenAI parser reads; the answers parsed back
 * into tool calls (`parseToolCalls`, ids `<idPrefix>-k`), with a stream holding back a call until it is whole
 * (`ToolHold`). Qwen's format has no switch for one call per reply: with `parallel_tool_calls` false the program still
 * gets every call the policy wrote (and trained on), and `log` says so.
 */
export function toolCallLowering(
  b: Record<string, unknown>,
  idPrefix: string,
  log: (line: string) => void,
  format: ToolFormatName = 'qwen',
): Transformed {
  const toolChoice = toolChoiceOf(b['tool_choice']);
  const parallel = b['parallel_tool_calls'];
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
    throw badParam('parallel_tool_calls', parallel, 'Give true or false.');
  const tools = Array.isArray(b['tools']) && b['tools'].length > 0 && toolChoice !== 'none';
  return {
    body: {
      ...b,
      messages: lowerToolMessages(b['messages'], b['tools'], toolChoice, format),
      tools: undefined,
      tool_choice: undefined,
      parallel_tool_calls: undefined,
    },
    tools,
    answer: (text) => {
      if (!tools) return { content: text, toolCalls: [] };
      const { content, calls } = parseToolCalls(text, idPrefix, format);
      if (parallel === false && calls.length > 1)
        log(`parallel_tool_calls is false but the policy wrote ${calls.length} calls; all are returned`);
      return { content, toolCalls: calls };
    },
    hold: () => new ToolHold(tools),
  };
}

/**
 * OpenAI chat messages (with `tool_calls` and `tool` roles) plus `tools` -> plain {role, content} messages whose
 * ChatML rendering is Qwen2.5's: tools in the system turn (each as `promptTool` writes it: what a tool schema says
 * to the model, not the client's validation keys), calls as `<tool_call>` blocks in the assistant turn, consecutive
 * tool results as `<tool_response>` blocks in one user turn. Any ChatML template (ragen-tiny's, Qwen's own) then
 * renders them; throws ApiError (400) naming the bad field. With `toolChoice` `none` the tools are checked but not
 * shown (calls and results already in the history still are). `format` `compact` writes the tools block and the calls
 * in the compact format instead (src/tokenizer/tool-format.ts).
 */
export function lowerToolMessages(
  rawMessages: unknown,
  tools: unknown,
  toolChoice: ToolChoice = 'auto',
  format: ToolFormatName = 'qwen',
): unknown[] {
  if (!Array.isArray(rawMessages)) return rawMessages as unknown[]; // the serve parser names this error
  const checked = checkTools(tools);
  const toolList = toolChoice === 'none' ? [] : checked;
  const out: unknown[] = [];
  rawMessages.forEach((m, i) => {
    if (typeof m !== 'object' || m === null) return void out.push(m);
    const msg = m as Record<string, unknown>;
    if (msg['role'] === 'tool') {
      const content = textOf(msg['content'], `messages[${i}].content`);
      const block = toolResponseText(content);
      const prev = rawMessages[i - 1] as Record<string, unknown> | undefined;
      if (prev?.['role'] === 'tool') (out[out.length - 1] as ChatMessage).content += `\n${block}`;
      else out.push({ role: 'user', content: block });
      return;
    }
    if (msg['role'] === 'assistant' && Array.isArray(msg['tool_calls']) && msg['tool_calls'].length > 0) {
      const content =
        msg['content'] === null || msg['content'] === undefined ? '' : textOf(msg['content'], `messages[${i}].content`);
      const calls = msg['tool_calls'].map((c, j) => assistantCall(c, `messages[${i}].tool_calls[${j}]`));
      // Qwen writes '<|im_start|>assistant' + ('\n' + content if any) + '\n<tool_call>...' per call; ChatML writes the
      // first '\n' itself, so the plain content is that text without its first character.
      const text = (content ? `\n${content}` : '') + calls.map((c) => `\n${callText(c, format)}`).join('');
      return void out.push({ role: 'assistant', content: text.slice(1) });
    }
    out.push(msg);
  });
  if (toolList.length > 0) {
    const first = out[0] as Record<string, unknown> | undefined;
    const hasSystem = first?.['role'] === 'system' && typeof first['content'] === 'string';
    const system = toolsSystemText(hasSystem ? (first['content'] as string) : QWEN_DEFAULT_SYSTEM, toolList, format);
    if (hasSystem) out[0] = { role: 'system', content: system };
    else out.unshift({ role: 'system', content: system });
  }
  return out;
}

/**
 * Calls in a reply: every well-formed `<tool_call>{"name", "arguments"}</tool_call>` (in `format`); `content` is the
 * text before the first.
 */
export function parseToolCalls(
  text: string,
  idPrefix: string,
  format: ToolFormatName = 'qwen',
): { content: string | null; calls: ToolCall[] } {
  const calls: ToolCall[] = [];
  const re = new RegExp(CALL_BLOCK, 'g');
  let first = -1;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const call = readToolCall(m[1]!, format);
    if (!call.ok) continue; // a malformed call is the model's mistake, left in the text for the agent (and the reward) to see
    if (first < 0) first = m.index;
    calls.push({
      id: `${idPrefix}-${calls.length}`,
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.arguments) },
    });
  }
  if (calls.length === 0) return { content: text, calls };
  const before = text.slice(0, first).replace(/\n$/, '');
  return { content: before.trim() === '' ? null : before, calls };
}

/**
 * True when a reply holds tool-call text that is not a well-formed call: once every well-formed `<tool_call>` block is
 * removed, `tool_call` still appears (a block whose JSON did not parse, one never closed, a misspelt tag around the
 * word). A reply with no call at all (plain content) is not counted; garbles that lose the word itself are missed.
 */
export function unparsedToolCall(text: string, format: ToolFormatName = 'qwen'): boolean {
  const rest = text.replace(new RegExp(CALL_BLOCK, 'g'), (block, body: string) =>
    readToolCall(body, format).ok ? '' : block,
  );
  return rest.includes('tool_call');
}

/** A `<tool_call>` block, its body in group 1 (whitespace around it outside). */
const CALL_BLOCK = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/.source;

/** What the gateway does with `tool_choice`: `auto` (the policy decides) or `none` (no tools shown). */
export type ToolChoice = 'auto' | 'none';

/**
 * A request's `tool_choice` as the gateway honours it: absent, null or "auto" -> auto; "none" -> none. "required"
 * and a named function cannot be honoured (the policy samples freely; forcing a call would mean constraining its
 * tokens, and what is trained must be what it sampled), so they are a 400 saying so; anything else is a 400 naming
 * the forms.
 */
export function toolChoiceOf(choice: unknown): ToolChoice {
  if (choice === undefined || choice === null || choice === 'auto') return 'auto';
  if (choice === 'none') return 'none';
  const named =
    (choice as { type?: unknown; function?: { name?: unknown } } | null)?.type === 'function'
      ? (choice as { function?: { name?: unknown } }).function?.name
      : undefined;
  if (choice === 'required' || typeof named === 'string') {
    const what = choice === 'required' ? '"required"' : `naming function \`${named}\``;
    throw new ApiError(
      400,
      `tool_choice ${what} cannot be enforced by the training gateway: the policy samples its reply freely (and is trained on exactly that), so it cannot be made to call a tool; send "auto" (or leave tool_choice out) and let the reward teach the call, or "none".`,
      'invalid_request_error',
      'tool_choice',
      'unsupported_parameter',
    );
  }
  throw badParam(
    'tool_choice',
    choice,
    'Give "auto", "none", "required" or {"type": "function", "function": {"name": ...}}; the gateway honours "auto" and "none".',
  );
}

/** `tools` checked and written as the prompt shows them (`promptTool`); a bad tool is a 400 naming it. */
function checkTools(tools: unknown): unknown[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools))
    throw badParam(
      'tools',
      tools,
      'Give an array of {"type": "function", "function": {name, description, parameters}}.',
    );
  return tools.map((t, i) => {
    const f = (t as { type?: unknown; function?: { name?: unknown } } | null)?.function;
    if ((t as { type?: unknown } | null)?.type !== 'function' || typeof f?.name !== 'string' || f.name === '') {
      throw badParam(
        `tools[${i}]`,
        t,
        'Each tool is {"type": "function", "function": {"name": ..., "parameters": {...}}}.',
      );
    }
    try {
      return promptTool(t as { function: { name: string } });
    } catch (err) {
      throw new ApiError(
        400,
        `\`tools[${i}].function.parameters\` (${f.name}): ${(err as Error).message}.`,
        'invalid_request_error',
        `tools[${i}].function.parameters`,
      );
    }
  });
}

function assistantCall(c: unknown, param: string): { name: string; arguments: unknown } {
  const f = (c as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
  if (typeof f?.name !== 'string' || f.name === '')
    throw badParam(param, c, 'Each tool call is {"id", "type": "function", "function": {"name", "arguments"}}.');
  let args: unknown = f.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args === '' ? '{}' : args);
    } catch {
      throw new ApiError(
        400,
        `\`${param}.function.arguments\` is not JSON (${preview(args)}); send the arguments the model produced, a JSON object as a string.`,
        'invalid_request_error',
        `${param}.function.arguments`,
      );
    }
  }
  return { name: f.name, arguments: args };
}

function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((p) => typeof (p as { text?: unknown } | null)?.text === 'string'))
    return content.map((p) => (p as { text: string }).text).join('');
  throw badParam(param, content, 'Give a string or an array of text parts.');
}
