// sft.ts's `--builtin-context`: the built-in GuessNumber demos one sequence per turn (the preset's window) or one
// sequence per episode holding every turn (`full`, the layout of the gateway's merged calls).
import { describe, expect, it } from 'vitest';
import { loadConfig, loadTokenizer } from '../../../src/index.js';
import { buildDemos } from '../../../src/train/sft-demos.js';
import { GUESS_NUMBER_TINY } from '../e2e.js';
import { builtInDemoAgent } from './sft.js';

describe('sft.ts --builtin-context', () => {
  const preset = loadConfig({ config: 'guessnumber-ppo' }).agent;
  const tokenizer = loadTokenizer(GUESS_NUMBER_TINY);

  it('full: one demo sequence per episode holding all its turns; preset: one per turn', async () => {
    const episodes = 4;
    const demos = async (context: string) =>
      (await buildDemos(tokenizer, builtInDemoAgent(preset, context), { envs: ['GuessNumber'], episodes })).samples;
    const full = await demos('full');
    const perTurn = await demos('preset');
    expect(full.map((s) => s.episode)).toEqual([0, 1, 2, 3]);
    const turns = full.map((s) => s.turns.length);
    expect(turns.some((n) => n > 1)).toBe(true); // binary search takes several guesses on some of these seeds
    expect(perTurn.length).toBe(turns.reduce((a, b) => a + b, 0));
    expect(perTurn.every((s) => s.turns.length === 1)).toBe(true);
  });

  it('refuses any other value, naming it', () => {
    expect(() => builtInDemoAgent(preset, 'window')).toThrow(/--builtin-context must be preset or full, got "window"/);
  });
});
