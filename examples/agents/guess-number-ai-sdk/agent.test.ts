// The AI SDK example end to end through the gateway (examples/agents/e2e.ts, the suite every guess-number agent
// passes): its calls are the SFT demos token for token, trained on what was sampled, rewarded; a garbled call ends the
// episode unscored; one greedy episode on models/guess-number-tiny. Plus: its task hides GuessNumber's number.
import { describe, expect, it } from 'vitest';
import { guessNumberSecret } from '../../../src/envs/index.js';
import { guessNumberAgentSuite } from '../e2e.js';
import { MAX_NUMBER, secretOf } from './task.mjs';

guessNumberAgentSuite('ai-sdk', 'Vercel AI SDK', { boundedSchema: false });

describe("the AI SDK agent's task", () => {
  it('hides the same number as the built-in GuessNumber env for every seed', () => {
    for (let seed = 0; seed < 2000; seed += 7) expect(secretOf(seed)).toBe(guessNumberSecret(seed, MAX_NUMBER));
    expect(secretOf(4_000_000_123)).toBe(guessNumberSecret(4_000_000_123, MAX_NUMBER));
  });
});
