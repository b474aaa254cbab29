// The DeepCoder environment: write a Python program for a generated problem; its hidden tests run in
// the sandbox. Follows RAGEN's ragen/env/deepcoder (one submission, passed/total reward, success = all pass).
import { z } from 'zod';
import { ResetNeededError } from '../../util/index.js';
import { Sandbox, type SandboxLimits, type TestRun } from '../../sandbox/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { assembleProgram } from './answer.js';
import { STYLES, TIERS, type Problem, type Style } from './problem.js';
import { generateProblems, problemPool, renderProblem } from './problems.js';

/** DeepCoder's configuration (RAGEN's DeepCoderEnvConfig, with a generated set in place of the HF dataset). */
export const deepCoderSchema = z.object({
  /** Size of the generated problem set; every fifth problem is a validation problem. @default 400 */
  numProblems: z.number().int().min(20).max(100_000).default(400),
  /** Difficulty tiers to draw from. @default ['easy', 'medium', 'hard'] */
  tiers: z
    .array(z.enum(TIERS))
    .min(1)
    .default([...TIERS]),
  /**
   * Problem styles to draw from: `stdin` programs and/or `call` (a method of class Solution). @default ['stdin',
   * 'call']
   */
  styles: z
    .array(z.enum(STYLES))
    .min(1)
    .default([...STYLES]),
  /** Submissions per episode (RAGEN `max_steps`); a failed one shows feedback and allows another. @default 1 */
  maxSteps: z.number().int().min(1).default(1),
  /**
   * `bwrap` (namespaces; fails closed when bubblewrap does not work) or `none` (rlimits + seccomp only, host files
   * readable: opt in only on a disposable machine). @default 'bwrap'
   */
  sandbox: z.enum(['bwrap', 'none']).default('bwrap'),
  /** Wall time of one submission (all its tests). RAGEN: 3 s in an unconfined subprocess. @default 10 */
  wallSeconds: z.number().positive().max(600).default(10),
  /** CPU time of one submission. @default 5 */
  cpuSeconds: z.number().positive().max(600).default(5),
  /** Wall time of one test. @default 2 */
  perTestSeconds: z.number().positive().max(600).default(2),
  /** Address-space limit, MiB. @default 512 */
  memoryMB: z.number().int().min(64).max(65_536).default(512),
  /** Output limit of one test, bytes. @default 1048576 */
  outputBytes: z
    .number()
    .int()
    .min(1024)
    .max(1 << 30)
    .default(1 << 20),
  /** Sandboxed programs run at once (per process, shared by every DeepCoder env with the same settings). @default 2 */
  maxParallel: z.number().int().min(1).max(256).default(2),
});

export type DeepCoderConfig = z.infer<typeof deepCoderSchema>;

export const DEEPCODER_INSTRUCTION =
  'You are an expert Python programmer. You will be given a programming problem and must write a correct, efficient Python 3 solution that passes hidden tests. ' +
  'Answer with the code only (a markdown code block is accepted).';

const sandboxes = new Map<string, Sandbox>();

/** The one sandbox of these settings in this process (so envs share its parallelism limit and self-check). */
export function sharedSandbox(config: DeepCoderConfig): Sandbox {
  const limits: SandboxLimits = {
    wallSeconds: config.wallSeconds,
    cpuSeconds: config.cpuSeconds,
    perTestSeconds: config.perTestSeconds,
    memoryMB: config.memoryMB,
    outputBytes: config.outputBytes,
  };
  const key = JSON.stringify([config.sandbox, config.maxParallel, limits]);
  let sb = sandboxes.get(key);
  if (!sb) {
    sb = new Sandbox({ isolation: config.sandbox, limits, maxParallel: config.maxParallel });
    sandboxes.set(key, sb);
  }
  return sb;
}

/** The problem an env poses for (seed, mode): `seed mod n` over the selected split. */
export function deepCoderProblem(config: DeepCoderConfig, seed: number, mode: 'train' | 'val' = 'train'): Problem {
  const pool = problemPool(config.numProblems, mode, config.tiers, config.styles);
  if (pool.length === 0)
    throw new RangeError(
      `DeepCoder: no ${mode} problems among ${config.numProblems} with tiers ${config.tiers.join(',')} and styles ${config.styles.join(',')}`,
    );
  return pool[((seed % pool.length) + pool.length) % pool.length]!;
}

/** Whether a test's result matches its expected output (RAGEN: stripped stdout; `str(result)` for calls). */
export function testPassed(run: TestRun, expected: string, style: Style): boolean {
  if (run.status !== 'ok') return false;
  return style === 'stdin' ? run.output.replace(/\r\n/g, '\n').trim() === expected.trim() : run.output === expected;
}

/**
 * DeepCoder (single turn by default).
 *
 * ## Description
 * A programming problem from a generated set (20 families, 3 tiers, stdin and function-call styles,
 * ~10 hidden tests each). The model answers with Python 3; the program runs in the sandbox
 * (src/sandbox) on every hidden test.
 *
 * ## Action Space
 * Free text: Python code (the first markdown code block if there is one). A call-style answer may be
 * the whole `class Solution` or just the method. An empty answer is invalid (reward 0, the episode goes on).
 *
 * ## Observation
 * The statement with two examples and the answer format (starter code for call style); after a
 * submission, `Passed k/n tests.` and the first failure.
 *
 * ## Starting State
 * Problem `seed mod n` of the train (or val: every fifth problem) split filtered by `tiers` and `styles`.
 *
 * ## Rewards
 * passed / total tests (RAGEN's partial credit). Wrong answers, exceptions and every sandbox limit count as failed
 * tests.
 *
 * ## Episode End
 * Terminated when all tests pass or after `maxSteps` submissions (1).
 *
 * ## Info
 * `success` (all tests pass), `actionIsEffective` (= success, as RAGEN), `testsPassed`, `testsTotal`,
 * `tier`, `style`, `problem` (its id), `detail` (the first failure).
 *
 * ## Arguments
 * See {@link DeepCoderConfig}. Reset option `problem: k` poses problem k of the whole set.
 */
export class DeepCoderEnv implements Env {
  readonly instruction = DEEPCODER_INSTRUCTION;
  readonly legend = '';
  readonly actionNames = undefined;
  private readonly sandbox: Sandbox;
  private problem: Problem | undefined;
  private prompt = '';
  private view = '';
  private steps = 0;
  private done = false;

  constructor(readonly config: DeepCoderConfig) {
    this.sandbox = sharedSandbox(config);
  }

  async reset({ seed, mode, options }: ResetOptions): Promise<ResetResult> {
    checkResetOptions('DeepCoder', options, ['problem']);
    await this.sandbox.check(); // fails closed, at reset, when the sandbox cannot run here
    const k = options?.problem;
    if (k !== undefined) {
      const all = generateProblems(this.config.numProblems);
      if (!Number.isInteger(k) || (k as number) < 0 || (k as number) >= all.length)
        throw new RangeError(
          `DeepCoder reset option problem must be an integer in 0..${all.length - 1}, got ${JSON.stringify(k)}`,
        );
      this.problem = all[k as number]!;
    } else {
      this.problem = deepCoderProblem(this.config, seed, mode ?? 'train');
    }
    this.prompt = renderProblem(this.problem);
    this.view = this.prompt;
    this.steps = 0;
    this.done = false;
    return { observation: this.view, info: this.info(false, true, false, 0) };
  }

  async step(action: string): Promise<StepResult> {
    if (this.problem === undefined)
      throw new ResetNeededError('DeepCoder.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError(
        'DeepCoder.step() called after the episode ended; call reset({seed}) to start a new one.',
      );
    const problem = this.problem;
    const program = assembleProgram(action, problem);
    if (!program.ok) {
      return {
        observation: `${this.view}\n\nInvalid action: ${program.reason}.`,
        reward: 0,
        terminated: false,
        truncated: false,
        info: { ...invalidInfo(program.reason), ...this.extra(0) },
      };
    }
    const run = await this.sandbox.run({
      code: program.code,
      style: problem.style,
      ...(problem.functionName ? { functionName: problem.functionName } : {}),
      inputs: problem.tests.map((t) => t.input),
    });
    let passed = 0;
    let detail = '';
    problem.tests.forEach((t, i) => {
      if (testPassed(run.tests[i]!, t.output, problem.style)) passed++;
      else if (!detail) detail = failure(run.tests[i]!, t.output, i);
    });
    const total = problem.tests.length;
    const success = passed === total;
    this.steps++;
    this.done = success || this.steps >= this.config.maxSteps;
    const verdict = `Passed ${passed}/${total} tests.${detail ? ` ${detail}` : ''}`;
    this.view = `${this.prompt}\n\n${verdict}`;
    const info = this.info(success, true, success, passed);
    if (detail) info.detail = detail;
    return { observation: this.view, reward: passed / total, terminated: this.done, truncated: false, info };
  }

  render(): string {
    return this.view;
  }

  close(): void {}

  private info(success: boolean, valid: boolean, effective: boolean, passed: number): EnvInfo {
    return { success, actionIsValid: valid, actionIsEffective: effective, ...this.extra(passed) };
  }

  private extra(passed: number): Record<string, number | string> {
    const p = this.problem!;
    return { testsPassed: passed, testsTotal: p.tests.length, tier: p.tier, style: p.style, problem: p.id };
  }
}

/** Why test i failed; expected outputs are shown only for the examples the statement shows (the rest stay hidden). */
function failure(run: TestRun, expected: string, i: number): string {
  const where = `Test ${i + 1}:`;
  if (run.status !== 'ok') return `${where} ${run.error ?? run.status}.`;
  const got = JSON.stringify(run.output.trim().slice(0, 200));
  return i < 2
    ? `${where} wrong answer: got ${got}, expected ${JSON.stringify(expected.trim())}.`
    : `${where} wrong answer (a hidden test).`;
}
