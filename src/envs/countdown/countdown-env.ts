// The Countdown environment: reach a target number with an arithmetic expression over given numbers.
// Follows RAGEN's ragen/env/countdown (TinyZero scoring), with generated tasks and a safe parser instead of eval.
import { z } from 'zod';
import { ResetNeededError, Rng } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { scoreAnswer } from './expression.js';
import { generateTask, type CountdownTask } from './generator.js';

/** Countdown's configuration (RAGEN's CountdownEnvConfig, with a generator in place of the data file). */
export const countdownSchema = z
  .object({
    /** Fewest numbers in a task. @default 3 */
    minNumbers: z.number().int().min(2).max(6).default(3),
    /** Most numbers in a task. @default 4 */
    maxNumbers: z.number().int().min(2).max(6).default(4),
    /** Numbers are drawn from 1..maxNumber. @default 100 */
    maxNumber: z.number().int().min(1).max(10_000).default(100),
    /** Targets lie in 1..maxTarget. @default 100 */
    maxTarget: z.number().int().min(1).max(1_000_000).default(100),
    /** Reward of a correct answer (RAGEN `score`). @default 1.0 */
    correctScore: z.number().default(1.0),
    /** Reward of an answer with the right numbers but the wrong value (RAGEN `format_score`). @default 0.1 */
    formatScore: z.number().default(0.1),
  })
  .refine((c) => c.minNumbers <= c.maxNumbers, { message: 'minNumbers must be <= maxNumbers', path: ['minNumbers'] });

export type CountdownConfig = z.infer<typeof countdownSchema>;

export const COUNTDOWN_INSTRUCTION =
  'You are solving the Countdown puzzle. You should use the num list to create an equation that equals the target. ' +
  'Use each number exactly once, with + - * / and parentheses. ' +
  "Example answer format: <think> To find an equation using [3, 5, 2] to get 4. Let's check 2 + 5 = 7, 7 - 3 = 4. " +
  'So the answer is 2 + 5 - 3 = 4. </think><answer>2 + 5 - 3</answer>';

/** The task an env would pose for `seed` (the same one `reset({seed})` poses). */
export function countdownTask(config: CountdownConfig, seed: number): CountdownTask {
  return generateTask(new Rng(seed), config);
}

/**
 * Countdown (single turn).
 *
 * ## Description
 * Given 3-4 numbers and a target, write an arithmetic expression that uses each number exactly once and
 * equals the target. Tasks are generated from the seed and always have a solution.
 *
 * ## Action Space
 * Free text: an expression of non-negative integers, `+ - * /` (also `× ÷ −`), unary minus and parentheses.
 * Text that is not such an expression (any other character, a syntax error, more than 1000 characters or
 * nesting deeper than 64) is an invalid action: reward 0, the episode goes on.
 *
 * ## Observation
 * `Target: 24, nums: [3, 5, 2, 8]`; after the answer, one more line with the verdict.
 *
 * ## Starting State
 * Numbers drawn uniformly from 1..maxNumber (minNumbers..maxNumbers of them); a random expression tree over
 * all of them with positive-integer intermediate values (exact division only) gives the target, which must
 * lie in 1..maxTarget and differ from every given number. `mode` does not change the task: seeds do.
 *
 * ## Rewards
 * Scored with exact rational arithmetic (so `(8 / 3) * 3` equals 8): `correctScore` (1.0) when the value is
 * the target and each number is used exactly once; `formatScore` (0.1) when the numbers are right but the
 * value is not; 0 when the numbers are wrong (a missing, extra or repeated number) or it divides by zero.
 *
 * ## Episode End
 * Terminated after the first valid expression. No truncation (the manager's action cap applies).
 *
 * ## Info
 * `success` (reward is `correctScore`), `actionIsValid`, `actionIsEffective`, `reason` (why an answer
 * scored below 1 or was invalid), `target` and `numNumbers`.
 *
 * ## Arguments
 * See {@link CountdownConfig}.
 */
export class CountdownEnv implements Env {
  readonly instruction = COUNTDOWN_INSTRUCTION;
  readonly legend = '';
  readonly actionNames = undefined;
  private task: CountdownTask | undefined;
  private done = false;
  private observation = '';

  constructor(readonly config: CountdownConfig) {}

  /** `options.numbers` and `options.target` pose a hand-built task instead of a generated one. */
  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('Countdown', options, ['numbers', 'target']);
    if (options?.numbers !== undefined || options?.target !== undefined) {
      const numbers = options.numbers;
      const target = options.target;
      if (
        !Array.isArray(numbers) ||
        !numbers.every((n) => Number.isSafeInteger(n) && n >= 0) ||
        !Number.isSafeInteger(target)
      ) {
        throw new TypeError(
          `Countdown reset options need numbers: non-negative integers and target: an integer, got ${JSON.stringify(options)}`,
        );
      }
      this.task = { numbers: [...(numbers as number[])], target: target as number, witness: '' };
    } else {
      this.task = countdownTask(this.config, seed);
    }
    this.done = false;
    this.observation = `Target: ${this.task.target}, nums: [${this.task.numbers.join(', ')}]`;
    return { observation: this.observation, info: this.info(false, true, true) };
  }

  step(action: string): StepResult {
    if (this.task === undefined)
      throw new ResetNeededError('Countdown.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError(
        'Countdown.step() called after the episode ended; call reset({seed}) to start a new one.',
      );
    const verdict = scoreAnswer(
      action,
      this.task.numbers,
      this.task.target,
      this.config.correctScore,
      this.config.formatScore,
    );
    if (!verdict.valid) {
      return {
        observation: this.observation,
        reward: 0,
        terminated: false,
        truncated: false,
        info: { ...invalidInfo(verdict.reason!), ...this.extra() },
      };
    }
    this.done = true;
    const success = verdict.correct;
    const head = `Target: ${this.task.target}, nums: [${this.task.numbers.join(', ')}]`;
    this.observation = `${head}\n${success ? `Correct: ${verdict.value}.` : `Incorrect: ${verdict.reason}.`}`;
    const info = this.info(success, true, true);
    if (verdict.reason !== undefined) info.reason = verdict.reason;
    return { observation: this.observation, reward: verdict.score, terminated: true, truncated: false, info };
  }

  render(): string {
    return this.observation;
  }

  close(): void {}

  private info(success: boolean, valid: boolean, effective: boolean): EnvInfo {
    return { success, actionIsValid: valid, actionIsEffective: effective, ...this.extra() };
  }

  private extra(): { target: number; numNumbers: number } {
    return { target: this.task!.target, numNumbers: this.task!.numbers.length };
  }
}
