// The trajectory viewer's model of a gateway turn, on hand-written calls in the shapes an OpenAI client sends.
import { describe, expect, it } from 'vitest';
import { agentCallView } from '../../dashboard-ui/src/pages/agent-call.js';

const tools = [{ type: 'function', function: { name: 'look', parameters: { type: 'object', properties: {} } } }];
const first = {
  messages: [
    { role: 'system', content: 'Find the key.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Where is it?' },
        { type: 'image_url', image_url: { url: 'x' } },
      ],
    },
  ],
  tools,
  reply: {
    role: 'assistant' as const,
    content: null,
    tool_calls: [
      { id: 'call_e_0-0', type: 'function' as const, function: { name: 'look', arguments: '{"dir": "up"}' } },
    ],
  },
};
const second = {
  messages: [
    ...first.messages,
    { role: 'assistant', content: '', tool_calls: first.reply.tool_calls },
    { role: 'tool', tool_call_id: 'call_e_0-0', content: 'a key on the table' },
    { role: 'tool', tool_call_id: 'nobody', content: 'stray' },
  ],
  tools,
  reply: { role: 'assistant' as const, content: 'The key is on the table.' },
};

describe('agentCallView', () => {
  it('shows a first call whole: text parts, other parts by type, the tools, and the reply with its tool call', () => {
    expect(agentCallView(first)).toEqual({
      earlier: 0,
      messages: [
        { role: 'system', text: 'Find the key.', toolCalls: [] },
        { role: 'user', text: 'Where is it?\n[image_url]', toolCalls: [] },
      ],
      reply: { role: 'assistant', text: '', toolCalls: [{ id: 'call_e_0-0', name: 'look', args: '{"dir":"up"}' }] },
      tools: ['look'],
    });
  });

  it("skips the messages the previous call already sent and names each tool result's call", () => {
    const view = agentCallView(second, first);
    expect(view.earlier).toBe(2);
    expect(view.messages).toEqual([
      { role: 'assistant', text: '', toolCalls: [{ id: 'call_e_0-0', name: 'look', args: '{"dir":"up"}' }] },
      { role: 'tool', text: 'a key on the table', toolCalls: [], answers: 'look (call_e_0-0)' },
      { role: 'tool', text: 'stray', toolCalls: [], answers: 'nobody' },
    ]);
    expect(view.reply).toEqual({ role: 'assistant', text: 'The key is on the table.', toolCalls: [] });
  });

  it('keeps arguments that are not JSON as sent, and a call without tools says so', () => {
    const bad = { id: 'c', type: 'function' as const, function: { name: 'f', arguments: '{oops' } };
    const view = agentCallView({
      messages: [],
      tools: null,
      reply: { role: 'assistant', content: 'x', tool_calls: [bad] },
    });
    expect(view.tools).toBeNull();
    expect(view.reply.toolCalls).toEqual([{ id: 'c', name: 'f', args: '{oops' }]);
  });
});
