import { describe, expect, it } from 'vitest';
import { cutAtAnswer } from './openai-policy.js';

describe('a chat reply entering the history', () => {
  it('ends at its first </answer>, whatever a server wrote after it', () => {
    expect(cutAtAnswer('<think>a</think><answer>Up</answer> Turn 2: <answer>Left</answer>', 'length')).toBe(
      '<think>a</think><answer>Up</answer>',
    );
  });

  it('gets the </answer> a server left out when it stopped on it', () => {
    expect(cutAtAnswer('<think>a</think><answer>Up', 'stop')).toBe('<think>a</think><answer>Up</answer>');
  });

  it('stays as it is when it ran out of tokens or never opened an answer', () => {
    expect(cutAtAnswer('<think>a</think><answer>Up', 'length')).toBe('<think>a</think><answer>Up');
    expect(cutAtAnswer('<think>no answer', 'stop')).toBe('<think>no answer');
  });
});
