// Qwen2.5's tool format as plain text, shared by the training gateway (OpenAI tools <-> Qwen messages) and the MCP
// environment (MCP tools -> the first observation; a reply's `<tool_call>` block -> one call): one writer, one reader.

/**
 * JSON as Python's `json.dumps` writes it (`", "` and `": "` separators, non-ASCII kept): what `tojson` prints in
 * Hugging Face's template renderer, so tool schemas and re-rendered calls read as the model saw them in training.
 */
export function pyJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(', ')}}`;
}

/** The text of one call inside an assistant turn, as Qwen2.5's template writes it. */
export function toolCallText(call: { name: string; arguments: unknown }): string {
  return `<tool_call>\n{"name": "${call.name}", "arguments": ${pyJson(call.arguments)}}\n</tool_call>`;
}

/** The tools section Qwen2.5's template appends to the system turn (word for word), without the system text before it. */
export function toolsBlockText(tools: readonly unknown[]): string {
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>${tools.map((t) => `\n${pyJson(t)}`).join('')}\n</tools>\n\n` +
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/** The system text that announces `tools` (Qwen2.5's template, word for word). */
export function toolsSystemText(system: string, tools: readonly unknown[]): string {
  return `${system}\n\n${toolsBlockText(tools)}`;
}

/** A tool result as Qwen2.5's template shows it to the model (inside a user turn). */
export function toolResponseText(content: string): string {
  return `<tool_response>\n${content}\n</tool_response>`;
}

/** One `<tool_call>` block of a reply, read strictly: a call, or why it is not one (said so a model's author can fix it). */
export type ToolCallBlock = { ok: true; name: string; arguments: Record<string, unknown> } | { ok: false; reason: string };

/**
 * Every `<tool_call>...</tool_call>` block of `text`, in order, each parsed or rejected with a reason (bad JSON, no
 * name, arguments not an object); an opening tag with no closing one is a rejected block too. Never throws.
 */
export function readToolCallBlocks(text: string): ToolCallBlock[] {
  const blocks: ToolCallBlock[] = [];
  let at = text.indexOf('<tool_call>');
  while (at >= 0) {
    const end = text.indexOf('</tool_call>', at + 11);
    if (end < 0) {
      blocks.push({ ok: false, reason: '`<tool_call>` is never closed' });
      break;
    }
    blocks.push(readCall(text.slice(at + 11, end).trim()));
    at = text.indexOf('<tool_call>', end + 12);
  }
  return blocks;
}

function readCall(body: string): ToolCallBlock {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, reason: `the call is not JSON (${body.length > 80 ? `${body.slice(0, 80)}...` : body})` };
  }
  const p = parsed as { name?: unknown; arguments?: unknown } | null;
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return { ok: false, reason: 'the call is not a JSON object' };
  if (typeof p.name !== 'string' || p.name === '') return { ok: false, reason: 'the call has no "name"' };
  const args = p.arguments === undefined ? {} : p.arguments;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { ok: false, reason: `"arguments" of \`${p.name}\` is not a JSON object` };
  return { ok: true, name: p.name, arguments: args as Record<string, unknown> };
}
