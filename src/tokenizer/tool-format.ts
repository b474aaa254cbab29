// Tool formats as plain text, shared by the training gateway (OpenAI tools <-> chat messages) and the MCP environment
// (MCP tools -> the first observation; a reply's `<tool_call>` block -> one call): one writer, one reader per format.
// `qwen` is Qwen2.5's own (JSON calls); `compact` writes a call as `name(arg=value)` inside the same tags, for models
// too small to hold a 35-token JSON call at temperature 1 (docs/agents.md, "Tool formats").

/**
 * How a model was taught to see tools and write calls: `qwen` (Qwen2.5's template, the default) or `compact`. A model
 * directory names its format in tokenizer_config.json's `ragen_tool_format`.
 */
export type ToolFormatName = 'qwen' | 'compact';

export const TOOL_FORMATS: readonly ToolFormatName[] = ['qwen', 'compact'];

/**
 * JSON as Python's `json.dumps` writes it (`", "` and `": "` separators, non-ASCII kept): what `tojson` prints in
 * Hugging Face's template renderer, so tool schemas and re-rendered calls read as the model saw them in training.
 */
export function pyJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`)
    .join(', ')}}`;
}

/** The text of one call inside an assistant turn, as Qwen2.5's template writes it (or the compact format). */
export function toolCallText(call: { name: string; arguments: unknown }, format: ToolFormatName = 'qwen'): string {
  if (format === 'compact') return `<tool_call>${compactCallText(call)}</tool_call>`;
  return `<tool_call>\n{"name": "${call.name}", "arguments": ${pyJson(call.arguments)}}\n</tool_call>`;
}

/** `name(key=value, ...)`, each value as JSON (`pyJson`): the body of a compact call. */
function compactCallText(call: { name: string; arguments: unknown }): string {
  const args = Object.entries((call.arguments ?? {}) as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return `${call.name}(${args.map(([k, v]) => `${k}=${pyJson(v)}`).join(', ')})`;
}

/**
 * The tools section Qwen2.5's template appends to the system turn (word for word), without the system text before it;
 * in the compact format, one signature line per tool (`compactSignature`) and how to call.
 */
export function toolsBlockText(tools: readonly unknown[], format: ToolFormatName = 'qwen'): string {
  if (format === 'compact')
    return (
      '# Tools\n\nCall a tool as <tool_call>name(argument=value, ...)</tool_call>, each value written as JSON. The tools:' +
      tools.map((t) => `\n${compactSignature(t)}`).join('')
    );
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>${tools.map((t) => `\n${pyJson(t)}`).join('')}\n</tools>\n\n` +
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/**
 * One tool of the compact tools block: `name(a: integer, b?: string) - description`, a parameter's type written as
 * its JSON type when the schema says no more, else as its (prompt-reduced) schema in JSON; `?` marks an optional one.
 */
function compactSignature(tool: unknown): string {
  const f = (tool as { function?: { name?: unknown; description?: unknown; parameters?: unknown } }).function ?? {};
  const params = (f.parameters ?? {}) as { properties?: Record<string, unknown>; required?: unknown };
  const required = Array.isArray(params.required) ? params.required : [];
  const args = Object.entries(params.properties ?? {}).map(([k, schema]) => {
    const keys = typeof schema === 'object' && schema !== null ? Object.keys(schema) : [];
    const type = (schema as { type?: unknown }).type;
    const text = keys.length === 1 && typeof type === 'string' ? type : pyJson(schema);
    return `${k}${required.includes(k) ? '' : '?'}: ${text}`;
  });
  const description = typeof f.description === 'string' && f.description !== '' ? ` - ${f.description}` : '';
  return `${String(f.name)}(${args.join(', ')})${description}`;
}

/** The system text that announces `tools` (Qwen2.5's template, word for word, or the compact block). */
export function toolsSystemText(system: string, tools: readonly unknown[], format: ToolFormatName = 'qwen'): string {
  return `${system}\n\n${toolsBlockText(tools, format)}`;
}

/** A tool result as Qwen2.5's template shows it to the model (inside a user turn). */
export function toolResponseText(content: string): string {
  return `<tool_response>\n${content}\n</tool_response>`;
}

/**
 * One `<tool_call>` block of a reply, read strictly: a call, or why it is not one (said so a model's author can fix
 * it).
 */
export type ToolCallBlock =
  { ok: true; name: string; arguments: Record<string, unknown> } | { ok: false; reason: string };

/**
 * Every `<tool_call>...</tool_call>` block of `text`, in order, each parsed or rejected with a reason (bad JSON, no
 * name, arguments not an object); an opening tag with no closing one is a rejected block too. Never throws.
 */
export function readToolCallBlocks(text: string, format: ToolFormatName = 'qwen'): ToolCallBlock[] {
  const blocks: ToolCallBlock[] = [];
  let at = text.indexOf('<tool_call>');
  while (at >= 0) {
    const end = text.indexOf('</tool_call>', at + 11);
    if (end < 0) {
      blocks.push({ ok: false, reason: '`<tool_call>` is never closed' });
      break;
    }
    blocks.push(readToolCall(text.slice(at + 11, end).trim(), format));
    at = text.indexOf('<tool_call>', end + 12);
  }
  return blocks;
}

/** A `<tool_call>` block's body (whitespace around it removed) read as a call in `format`, or why it is not one. */
export function readToolCall(body: string, format: ToolFormatName = 'qwen'): ToolCallBlock {
  return format === 'compact' ? readCompactCall(body) : readJsonCall(body);
}

function readJsonCall(body: string): ToolCallBlock {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, reason: `the call is not JSON (${preview(body)})` };
  }
  const p = parsed as { name?: unknown; arguments?: unknown } | null;
  if (typeof p !== 'object' || p === null || Array.isArray(p))
    return { ok: false, reason: 'the call is not a JSON object' };
  if (typeof p.name !== 'string' || p.name === '') return { ok: false, reason: 'the call has no "name"' };
  const args = p.arguments === undefined ? {} : p.arguments;
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return { ok: false, reason: `"arguments" of \`${p.name}\` is not a JSON object` };
  return { ok: true, name: p.name, arguments: args as Record<string, unknown> };
}

/**
 * `name(key=value, ...)`: a name of letters, digits, `_`, `-` and `.`, then keyword arguments whose values are JSON
 * (split at the top-level commas, outside strings and brackets). Strict: a positional value, a repeated key or a value
 * that is not JSON rejects the call.
 */
function readCompactCall(body: string): ToolCallBlock {
  const m = /^([A-Za-z_][\w.-]*)\(([\s\S]*)\)$/.exec(body);
  if (!m) return { ok: false, reason: `the call is not name(argument=value, ...) (${preview(body)})` };
  const [, name, inner] = m as unknown as [string, string, string];
  const args: Record<string, unknown> = {};
  for (const part of splitTopLevel(inner)) {
    const eq = /^\s*([A-Za-z_]\w*)\s*=([\s\S]*)$/.exec(part);
    if (!eq) return { ok: false, reason: `\`${name}\`: ${JSON.stringify(part.trim())} is not argument=value` };
    const [, key, raw] = eq as unknown as [string, string, string];
    if (key in args) return { ok: false, reason: `\`${name}\`: argument \`${key}\` is given twice` };
    try {
      args[key] = JSON.parse(raw);
    } catch {
      return { ok: false, reason: `\`${name}\`: the value of \`${key}\` is not JSON (${preview(raw.trim())})` };
    }
  }
  return { ok: true, name, arguments: args };
}

/** `text` split at its commas outside JSON strings and brackets; an empty or blank text has no parts. */
function splitTopLevel(text: string): string[] {
  if (text.trim() === '') return [];
  const parts: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

const preview = (s: string) => (s.length > 80 ? `${s.slice(0, 80)}...` : s);

/**
 * Keywords a tool's `parameters` keep in the prompt, in the order they are written: the words transformers'
 * `get_json_schema` uses for a Python function's signature (what Qwen's tool-use data was written with). Everything
 * else a client sends (`$schema`, `additionalProperties: false`, `minimum`/`maximum`, `title`, `default`, `format`,
 * `pattern`, ...) is validation for the client's side and only lengthens the prompt; docs/agents.md says why.
 */
export const PROMPT_SCHEMA_KEYS = [
  'type',
  'enum',
  'items',
  'prefixItems',
  'properties',
  'required',
  'additionalProperties',
  'anyOf',
  'oneOf',
  'allOf',
  'nullable',
  'description',
] as const;

/**
 * One OpenAI function tool as the prompt shows it: `{"type": "function", "function": {name, description,
 * parameters}}` with `parameters` reduced to `PROMPT_SCHEMA_KEYS` in that order (local `$ref`s inlined, `const` as a
 * one-value `enum`, a `"null"` type or `{"type": "null"}` alternative as `nullable: true`, empty `required` and
 * `description` left out) and the function's other keys (`strict`, ...) dropped. So two clients that describe the
 * same tool render the same text. Throws an Error naming the problem (a `$ref` that is not local or not found).
 */
export function promptTool(tool: { function: { name: string; description?: unknown; parameters?: unknown } }): {
  type: 'function';
  function: Record<string, unknown>;
} {
  const f = tool.function;
  const params = f.parameters ?? { type: 'object', properties: {} }; // a function without arguments, as transformers writes it
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    throw new Error(`\`parameters\` must be a JSON schema object, got ${JSON.stringify(params)}`);
  const description = typeof f.description === 'string' && f.description !== '' ? f.description : undefined;
  return {
    type: 'function',
    function: {
      name: f.name,
      ...(description !== undefined ? { description } : {}),
      parameters: promptSchema(params, params, []),
    },
  };
}

/**
 * `schema` reduced to PROMPT_SCHEMA_KEYS (see promptTool); `root` resolves `$ref`s, `refs` are the ones being inlined
 * (a cycle stops there).
 */
function promptSchema(schema: unknown, root: unknown, refs: readonly string[]): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema; // `true`, `false`
  let s = { ...(schema as Record<string, unknown>) };
  const ref = s['$ref'];
  if (typeof ref === 'string') {
    delete s['$ref'];
    const target = resolveRef(ref, root) as Record<string, unknown>;
    // A recursive schema is inlined once; the recursion itself is named by its type alone.
    const inlined = refs.includes(ref)
      ? target['type'] !== undefined
        ? { type: target['type'] }
        : {}
      : (promptSchema(target, root, [...refs, ref]) as Record<string, unknown>);
    s = { ...inlined, ...s };
  }
  if (s['const'] !== undefined && s['enum'] === undefined) s['enum'] = [s['const']];
  if (Array.isArray(s['type']) && s['type'].includes('null')) {
    const rest = s['type'].filter((t) => t !== 'null');
    s['type'] = rest.length === 1 ? rest[0] : rest;
    s['nullable'] = true;
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    if (!Array.isArray(s[key])) continue;
    const isNull = (x: unknown) =>
      (x as { type?: unknown } | null)?.type === 'null' && Object.keys(x as object).length === 1;
    const members = (s[key] as unknown[]).filter((x) => !isNull(x));
    if (members.length < (s[key] as unknown[]).length) s['nullable'] = true;
    if (members.length === 1) {
      delete s[key];
      s = { ...(promptSchema(members[0], root, refs) as Record<string, unknown>), ...s };
    } else s[key] = members;
  }
  const out: Record<string, unknown> = {};
  for (const key of PROMPT_SCHEMA_KEYS) {
    const v = s[key];
    if (v === undefined) continue;
    if (key === 'properties' && typeof v === 'object' && v !== null)
      out[key] = Object.fromEntries(Object.entries(v).map(([k, p]) => [k, promptSchema(p, root, refs)]));
    else if (key === 'items' || key === 'additionalProperties') {
      if (typeof v === 'object' && v !== null)
        out[key] = Array.isArray(v) ? v.map((x) => promptSchema(x, root, refs)) : promptSchema(v, root, refs); // `additionalProperties: false` says nothing to the model
    } else if (key === 'prefixItems' || key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
      if (Array.isArray(v)) out[key] = v.map((x) => promptSchema(x, root, refs));
    } else if (key === 'required') {
      if (Array.isArray(v) && v.length > 0) out[key] = v;
    } else if (key === 'description') {
      if (typeof v === 'string' && v !== '') out[key] = v;
    } else if (key === 'nullable') {
      if (v === true) out[key] = true;
    } else out[key] = v;
  }
  return out;
}

/** The schema a local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`, any JSON pointer into the root) points at. */
function resolveRef(ref: string, root: unknown): unknown {
  if (!ref.startsWith('#'))
    throw new Error(
      `\`$ref\` ${JSON.stringify(ref)} is not local; the gateway inlines only references into the tool's own schema (#/$defs/...), so put the definition there`,
    );
  let at: unknown = root;
  for (const raw of ref
    .slice(1)
    .split('/')
    .filter((p) => p !== '')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[part] : undefined;
    if (at === undefined)
      throw new Error(`\`$ref\` ${JSON.stringify(ref)} points at nothing in the tool's schema; define it under $defs`);
  }
  return at;
}
