// Guess the number: find a hidden number in 1..maxNumber from higher/lower answers. The built-in-loop twin of the
// Vercel AI SDK example agent (examples/agents/guess-number-ai-sdk/), which computes the same number from the seed.
import { z } from 'zod';
import { ResetNeededError } from '../../util/index.js';
import {
  invalidInfo,
  checkResetOptions,
  type Env,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';

/** Guess-the-number settings. */
export const guessNumberSchema = z.object({
  /** The hidden number is drawn from 1..maxNumber. @default 16 */
  maxNumber: z.number().int().min(2).max(1_000_000).default(16),
  /** Guesses allowed (binary search needs ceil(log2(maxNumber + 1))). @default 5 */
  maxGuesses: z.number().int().min(1).default(5),
});

export type GuessNumberConfig = z.infer<typeof guessNumberSchema>;

/**
 * The hidden number of a seed: a 32-bit integer mix of the seed mapped into 1..maxNumber. Written with plain
 * integer arithmetic so an agent program in any language can compute it (the example agent has a copy).
 */
export function guessNumberSecret(seed: number, maxNumber: number): number {
  let h = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return 1 + ((h >>> 0) % maxNumber);
}

/** Binary search's guesses (midpoint, rounded down) until it names `secret`. */
export function binarySearchGuesses(secret: number, maxNumber: number): number[] {
  const out: number[] = [];
  let lo = 1;
  let hi = maxNumber;
  for (;;) {
    const g = Math.floor((lo + hi) / 2);
    out.push(g);
    if (g === secret) return out;
    if (g < secret) lo = g + 1;
    else hi = g - 1;
  }
}

/**
 * ## Description
 * A number between 1 and `maxNumber` is hidden; each guess is answered `higher` (the number is larger),
 * `lower` or `correct`. Binary search finds it in ceil(log2(maxNumber + 1)) guesses.
 *
 * ## Action space
 * An integer in 1..maxNumber, written in decimal. Anything else is invalid and costs no guess.
 *
 * ## Observation
 * The task (range and guesses) at reset; after each guess, the task with every guess so far and its answer
 * (`Your guesses: 8 higher, 12 lower.`) and the guesses left: the state is the whole history.
 *
 * ## Starting state
 * The seed fixes the hidden number (`guessNumberSecret`).
 *
 * ## Rewards
 * 1 for the correct guess, 0 otherwise.
 *
 * ## Episode end
 * Terminated on the correct guess or when `maxGuesses` valid guesses are spent.
 *
 * ## Info
 * `success`: the number was found. `guesses`: valid guesses made so far.
 *
 * ## Arguments
 * `maxNumber` (16), `maxGuesses` (5).
 */
export class GuessNumberEnv implements Env {
  readonly instruction =
    'You are playing guess the number. Each turn, answer with one number; you are told whether the hidden number is higher, lower or correct.';
  readonly legend = '';
  readonly actionNames = undefined;
  private secret = 0;
  private guesses = 0;
  private done = true;
  private started = false;
  private observation = '';
  private history: string[] = [];

  constructor(readonly config: GuessNumberConfig) {}

  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('GuessNumber', options, []);
    this.secret = guessNumberSecret(seed, this.config.maxNumber);
    this.guesses = 0;
    this.history = [];
    this.done = false;
    this.started = true;
    this.observation = `Guess the hidden number between 1 and ${this.config.maxNumber}. You have ${this.config.maxGuesses} guesses.`;
    return {
      observation: this.observation,
      info: { success: false, actionIsValid: true, actionIsEffective: false, guesses: 0 },
    };
  }

  step(action: string): StepResult {
    if (!this.started) throw new ResetNeededError('GuessNumber: call reset({seed}) before step().');
    if (this.done) throw new ResetNeededError('GuessNumber: the episode ended; call reset({seed}) for a new one.');
    const text = action.trim();
    const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!(n >= 1 && n <= this.config.maxNumber)) {
      const shown = text.length > 40 ? `${text.slice(0, 40)}...` : text;
      const info = invalidInfo(
        `${JSON.stringify(shown)} is not a number from 1 to ${this.config.maxNumber}; answer with one number.`,
        { guesses: this.guesses },
      );
      return { observation: this.observation, reward: 0, terminated: false, truncated: false, info };
    }
    this.guesses++;
    const correct = n === this.secret;
    const word = correct ? 'correct' : n < this.secret ? 'higher' : 'lower';
    const left = this.config.maxGuesses - this.guesses;
    this.done = correct || left === 0;
    this.history.push(`${n} ${word}`);
    // the whole history in every observation: a policy that sees only the current state (window 1) has what it needs
    this.observation = `Guess the hidden number between 1 and ${this.config.maxNumber}. Your guesses: ${this.history.join(', ')}. ${left} guesses left.`;
    return {
      observation: this.observation,
      reward: correct ? 1 : 0,
      terminated: this.done,
      truncated: false,
      info: { success: correct, actionIsValid: true, actionIsEffective: true, guesses: this.guesses },
    };
  }

  render(): string {
    return this.observation;
  }

  close(): void {}
}
