// The trajectory viewer's model of an agent program's turn (a gateway episode): the chat call's messages as the
// program sent them (tool calls and tool results named), and the reply it got. Pure data, no DOM.
import type { AgentCall } from '../../../src/agent/index.js';

/** A function call as shown: its id, name, and arguments (compact JSON, or the raw string when it is not JSON). */
export interface ToolCallView {
  id: string;
  name: string;
  args: string;
}

/** One chat message as shown. */
export interface MessageView {
  role: string;
  /** The content as text: a string as is, text parts joined, other parts as `[type]`; '' for none. */
  text: string;
  toolCalls: ToolCallView[];
  /** A tool result: the call it answers, `name (id)` (just the id when no earlier call has it). */
  answers?: string;
}

export interface AgentCallView {
  /** Leading messages equal to the previous call's (shown there, not repeated). */
  earlier: number;
  /** The request's messages after those. */
  messages: MessageView[];
  /** The reply the program got. */
  reply: MessageView;
  /** Names of the tools offered; null when the call offered none. */
  tools: string[] | null;
}

const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function contentText(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((p) => {
      const part = obj(p);
      return typeof part['text'] === 'string' ? part['text'] : `[${String(part['type'] ?? 'part')}]`;
    })
    .join('\n');
}

function toolCallView(raw: unknown): ToolCallView {
  const c = obj(raw);
  const fn = obj(c['function']);
  const args = fn['arguments'];
  let shown = typeof args === 'string' ? args : JSON.stringify(args ?? null);
  if (typeof args === 'string') {
    try {
      shown = JSON.stringify(JSON.parse(args));
    } catch {
      // not JSON: shown as sent
    }
  }
  return { id: String(c['id'] ?? ''), name: String(fn['name'] ?? '?'), args: shown };
}

function messageView(raw: unknown, names: ReadonlyMap<string, string>): MessageView {
  const m = obj(raw);
  const role = typeof m['role'] === 'string' ? m['role'] : '?';
  const calls = Array.isArray(m['tool_calls']) ? m['tool_calls'].map(toolCallView) : [];
  const view: MessageView = { role, text: contentText(m['content']), toolCalls: calls };
  if (role === 'tool') {
    const id = String(m['tool_call_id'] ?? '');
    const name = names.get(id);
    view.answers = name === undefined ? id : `${name} (${id})`;
  }
  return view;
}

/** The view of `call`; `previous` (the turn before's call) decides which leading messages are not repeated. */
export function agentCallView(call: AgentCall, previous?: AgentCall): AgentCallView {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  let earlier = 0;
  if (previous)
    while (
      earlier < previous.messages.length &&
      earlier < call.messages.length &&
      same(previous.messages[earlier], call.messages[earlier])
    )
      earlier++;
  // Tool call ids -> names, from every assistant message sent and the previous reply.
  const names = new Map<string, string>();
  for (const m of [...(previous ? [previous.reply] : []), ...call.messages, call.reply]) {
    const calls = obj(m)['tool_calls'];
    if (Array.isArray(calls)) for (const c of calls.map(toolCallView)) names.set(c.id, c.name);
  }
  return {
    earlier,
    messages: call.messages.slice(earlier).map((m) => messageView(m, names)),
    reply: messageView(call.reply, names),
    tools: call.tools === null ? null : call.tools.map((t) => String(obj(obj(t)['function'])['name'] ?? '?')),
  };
}
