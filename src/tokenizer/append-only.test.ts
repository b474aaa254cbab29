// Our append-only Qwen templates (`ragen-qwen`): each turn's rendering extends the last one verbatim, earlier
// <think> reasoning included, and the probe tells them apart from Qwen3's own template, which rewrites history.
import { describe, expect, it } from 'vitest';
import {
  appendOnlyViolation,
  HfTokenizer,
  loadQwenTokenizer,
  qwenTokenizerFiles,
  ragenQwenTemplate,
  type ChatMessage,
} from './index.js';

const ragen25 = new HfTokenizer(qwenTokenizerFiles('qwen2.5', ragenQwenTemplate('qwen2.5')), 'ragen-qwen2.5');
const ragen3 = new HfTokenizer(qwenTokenizerFiles('qwen3', ragenQwenTemplate('qwen3')), 'ragen-qwen3');

/** An agent exchange of `turns` user turns, the assistant replying with reasoning after each but the last. */
function exchange(turns: number, system: boolean): ChatMessage[] {
  const m: ChatMessage[] = system ? [{ role: 'system', content: 'You solve Sokoban.' }] : [];
  for (let t = 1; t <= turns; t++) {
    m.push({ role: 'user', content: `Turn ${t}: State:\n#P_#` });
    if (t < turns) m.push({ role: 'assistant', content: `<think>step ${t}: push right</think><answer>Right</answer>` });
  }
  return m;
}

describe('the ragen-qwen templates', () => {
  it("render Qwen2.5's ChatML with its default system prompt, history verbatim", () => {
    const text = ragen25.applyChatTemplate(exchange(2, false), { addGenerationPrompt: true });
    expect(text).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nTurn 1: State:\n#P_#<|im_end|>\n' +
        '<|im_start|>assistant\n<think>step 1: push right</think><answer>Right</answer><|im_end|>\n' +
        '<|im_start|>user\nTurn 2: State:\n#P_#<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
    // A system message of the caller's replaces the default one.
    expect(ragen25.applyChatTemplate(exchange(1, true))).toBe(
      '<|im_start|>system\nYou solve Sokoban.<|im_end|>\n<|im_start|>user\nTurn 1: State:\n#P_#<|im_end|>\n',
    );
  });

  it("agree with Qwen2.5-Instruct's own template on plain conversations", () => {
    const own = loadQwenTokenizer('qwen2.5');
    for (const system of [true, false]) {
      const m = exchange(3, system);
      expect(ragen25.applyChatTemplate(m, { addGenerationPrompt: true })).toBe(
        own.applyChatTemplate(m, { addGenerationPrompt: true }),
      );
    }
  });

  it('are append-only: rendering turn n+1 begins with turn n plus the reply, for both families', () => {
    for (const tok of [ragen25, ragen3]) {
      for (const system of [true, false]) {
        for (let n = 1; n < 6; n++) {
          const before = tok.applyChatTemplate(exchange(n, system), { addGenerationPrompt: true });
          const reply = `<think>step ${n}: push right</think><answer>Right</answer>`;
          const after = tok.applyChatTemplate(exchange(n + 1, system), { addGenerationPrompt: true });
          expect(after.startsWith(before + reply), `${tok.name} turn ${n}`).toBe(true);
        }
      }
      expect(appendOnlyViolation(tok)).toBeNull();
    }
  });

  it("keep Qwen3's earlier <think> reasoning, which Qwen3's own template drops", () => {
    const text = ragen3.applyChatTemplate(exchange(3, false), { addGenerationPrompt: true });
    expect(text.startsWith('<|im_start|>user\n')).toBe(true); // Qwen3 has no default system prompt
    expect(text).toContain('<think>step 1: push right</think>');
    expect(text).toContain('<think>step 2: push right</think>');
    const own = loadQwenTokenizer('qwen3');
    expect(own.applyChatTemplate(exchange(3, false), { addGenerationPrompt: true })).not.toContain(
      'step 1: push right</think>',
    );
    expect(appendOnlyViolation(own)).toMatch(/^rendering turn 2 changes earlier text at character \d+/);
  });

  it('refuse nothing: no messages, a lone assistant turn, tool and mid-conversation system messages all render', () => {
    const odd: ChatMessage[][] = [
      [],
      [{ role: 'assistant', content: 'hi' }],
      [
        { role: 'tool', content: '{"x": 1}' },
        { role: 'system', content: 'late' },
      ],
    ];
    for (const tok of [ragen25, ragen3]) {
      for (const m of odd) {
        const text = tok.applyChatTemplate(m, { addGenerationPrompt: true });
        expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
        for (const msg of m) expect(text).toContain(`<|im_start|>${msg.role}\n${msg.content}<|im_end|>\n`);
      }
    }
  });
});
