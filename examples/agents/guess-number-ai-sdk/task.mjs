// The guess-the-number task as the example agent states it: the range, the guess budget, the hidden number of a
// seed and the `guess` tool. Shared by agent.mjs and the SFT demonstrations (sft.ts), so both say the same words.

export const MAX_NUMBER = 16;
export const MAX_GUESSES = 5;

/** The user message that opens an episode. */
export const PROMPT = `Guess the hidden number between 1 and ${MAX_NUMBER}. You have ${MAX_GUESSES} guesses.`;

/** The `guess` tool's description and JSON schema (what the model sees in its tools block). */
export const GUESS_TOOL = {
  description: 'Guess the hidden number; answers higher, lower or correct.',
  parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
};

/**
 * The hidden number of a seed: a 32-bit integer mix of the seed in 1..maxNumber (src/env's guessNumberSecret,
 * GuessNumber).
 */
export function secretOf(seed, maxNumber = MAX_NUMBER) {
  let h = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return 1 + ((h >>> 0) % maxNumber);
}

/** The tool's answer to guess `n` (a number or anything the model wrote) when the hidden number is `secret`. */
export function answer(n, secret) {
  const k = Number(n);
  if (!Number.isInteger(k)) return `${JSON.stringify(n)} is not a whole number`;
  return k === secret ? 'correct' : k < secret ? 'higher' : 'lower';
}
