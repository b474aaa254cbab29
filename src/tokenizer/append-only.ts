// Whether a chat template is append-only, found by rendering: the agent loop (src/agent/sequence.ts) extends one token
// sequence turn by turn, so each turn's rendering must begin with the last turn's rendering plus the sampled reply.
import type { ChatMessage } from './chat-template.js';
import type { Tokenizer } from './tokenizer.js';

/** A multi-turn exchange as the agent loop writes it: replies with reasoning that a template might rewrite. */
const PROBE_TURNS = [
  {
    user: 'Turn 1: State:\n#P_#\nYou have 3 actions left.',
    reply: '<think>The box is to the right.</think><answer>Right</answer>',
  },
  {
    user: 'Turn 2: State:\n#_P#\nYou have 2 actions left.',
    reply: '<think>Now go left.</think><answer>Left || Up</answer>',
  },
  { user: 'Turn 3: State:\n#P_#\nYou have 1 actions left.', reply: '<answer>Down</answer>' },
];

/**
 * null when `tokenizer`'s chat template is append-only on the probe exchange (with and without a system message),
 * else a sentence saying where it is not: which turn's rendering changed which earlier text, or what it raised.
 */
export function appendOnlyViolation(tokenizer: Tokenizer): string | null {
  for (const system of [true, false]) {
    const messages: ChatMessage[] = system ? [{ role: 'system', content: 'You are an agent in a grid world.' }] : [];
    let prev: string | undefined;
    for (const [i, turn] of PROBE_TURNS.entries()) {
      messages.push({ role: 'user', content: turn.user });
      let rendered: string;
      try {
        rendered = tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true });
      } catch (err) {
        return `rendering turn ${i + 1} raised: ${(err as Error).message}`;
      }
      if (prev !== undefined && !rendered.startsWith(prev)) {
        let at = 0;
        while (at < prev.length && rendered[at] === prev[at]) at++;
        return `rendering turn ${i + 1} changes earlier text at character ${at} (${JSON.stringify(prev.slice(at, at + 40))} became ${JSON.stringify(rendered.slice(at, at + 40))})`;
      }
      prev = rendered + turn.reply;
      messages.push({ role: 'assistant', content: turn.reply });
    }
  }
  return null;
}
