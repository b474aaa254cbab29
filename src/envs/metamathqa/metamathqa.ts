// A static question-answer env over MetaMathQA-format records (inventory section 1.5), with numeric answer matching.
import { z } from 'zod';
import { ResetNeededError } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { answersMatch } from './answer.js';
import { loadRecords, splitFile, type QARecord } from './data.js';

/** MetaMathQA settings. */
export const metaMathQASchema = z.object({
  /**
   * A folder with train.jsonl and val.jsonl, or one .jsonl file for both splits; '' = the shipped sample. @default ''
   */
  dataPath: z.string().default(''),
  /** Answers allowed per question; attempt k (from 1) earns 1/2^(k-1) when right (RAGEN's rule). @default 1 */
  maxAttempts: z.number().int().min(1).default(1),
});

export type MetaMathQAConfig = z.infer<typeof metaMathQASchema>;

/**
 * ## Description
 * One math word problem per episode, from MetaMathQA-format JSONL (`query`, `response` ending in
 * "The answer is: X"). The agent answers with the final answer only.
 *
 * ## Action space
 * Free text: the answer. Numbers compare as numbers (`1,000` = `1000.0`, `3/4` = `0.75`, `$12` = `12`);
 * other answers compare lowercased without whitespace. "The answer is: X" is accepted too.
 *
 * ## Observation
 * The question; after a wrong answer with attempts left, "Incorrect. Please think again.".
 *
 * ## Starting state
 * Question `seed mod n` of the split's n records (mode `train` -> train.jsonl, `val` -> val.jsonl),
 * so seeds 0..n-1 visit every question once.
 *
 * ## Rewards
 * 1/2^(k-1) for a right answer at attempt k, else 0. An empty answer is invalid and changes nothing.
 *
 * ## Episode end
 * Terminated on a right answer or when `maxAttempts` answers were wrong.
 *
 * ## Info
 * `success`: answered right. `attempts`: answers given so far. `correctAnswer` (string) once the episode ends.
 */
export class MetaMathQAEnv implements Env {
  readonly instruction =
    'You are solving math word problems. Answer with the final answer only: a number, fraction or expression.';
  readonly legend = '';
  readonly actionNames = undefined;
  private record: QARecord | undefined;
  private attempts = 0;
  private done = true;
  private observation = '';
  private readonly splits: Partial<Record<'train' | 'val', QARecord[]>> = {};

  constructor(readonly config: MetaMathQAConfig) {
    splitFile(config.dataPath, 'train'); // fail at creation on a bad path, not at the first reset
  }

  reset({ seed, mode = 'train', options }: ResetOptions): ResetResult {
    checkResetOptions('MetaMathQA', options, []);
    const records = (this.splits[mode] ??= loadRecords(splitFile(this.config.dataPath, mode)));
    this.record = records[((seed % records.length) + records.length) % records.length]!;
    this.attempts = 0;
    this.done = false;
    this.observation = this.record.query;
    return {
      observation: this.observation,
      info: { success: false, actionIsValid: true, actionIsEffective: false, attempts: 0 },
    };
  }

  step(action: string): StepResult {
    if (this.record === undefined) throw new ResetNeededError('MetaMathQA: call reset({seed}) before step().');
    if (this.done) throw new ResetNeededError('MetaMathQA: the episode ended; call reset({seed}) for a new question.');
    if (action.trim() === '') {
      const info = invalidInfo('The answer is empty; answer with the final answer.', { attempts: this.attempts });
      return { observation: this.observation, reward: 0, terminated: false, truncated: false, info };
    }
    this.attempts++;
    const right = answersMatch(action, this.record.answer);
    const reward = right ? 1 / 2 ** (this.attempts - 1) : 0;
    this.done = right || this.attempts >= this.config.maxAttempts;
    this.observation = right ? 'Correct!' : this.done ? 'Incorrect.' : 'Incorrect. Please think again.';
    const info: EnvInfo = { success: right, actionIsValid: true, actionIsEffective: true, attempts: this.attempts };
    if (this.done) info.correctAnswer = this.record.answer;
    return { observation: this.observation, reward, terminated: this.done, truncated: false, info };
  }

  render(): string {
    return this.observation;
  }

  close(): void {}

  /** The reference answer of the current question (for the solver and tests). */
  get referenceAnswer(): string | undefined {
    return this.record?.answer;
  }
}
