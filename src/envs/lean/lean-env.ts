// The Lean environment: prove a theorem one tactic at a time, each candidate proof checked by a Kimina
// Lean server. Follows RAGEN's ragen/env/lean (acceptance rules, rewards, render).
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
import { KiminaClient, type LeanMessage } from './kimina-client.js';
import { DEFAULT_IMPORTS, generateTheorems, loadTheorems, type LeanTheorem } from './theorems.js';
import { formatMessages, judge, judgeFailure, type LeanVerdict } from './verdict.js';

/** Lean's configuration (RAGEN's LeanEnvConfig, camelCase). */
export const leanSchema = z.object({
  /** Base URL of the Kimina Lean server (`server_url`). @default 'http://127.0.0.1:8000' */
  serverUrl: z.string().url().default('http://127.0.0.1:8000'),
  /** API key of a server started with LEAN_SERVER_API_KEY ('' = none). @default '' */
  apiKey: z.string().default(''),
  /** Seconds Lean may spend on one check (`request_timeout`). @default 30 */
  requestTimeout: z.number().positive().default(30),
  /** Seconds one HTTP request may take (`http_timeout`). @default 60 */
  httpTimeout: z.number().positive().default(60),
  /** Attempts per request (`max_retries`). @default 3 */
  maxRetries: z.number().int().min(1).max(20).default(3),
  /** miniF2F-format JSONL (formal_statement, natural_language_statement); '' = the generated set. @default '' */
  dataPath: z.string().default(''),
  /** Size of the generated set (every fifth theorem is a validation theorem). @default 120 */
  numTheorems: z.number().int().min(10).max(100_000).default(120),
  /** Tactics per episode before it is cut off (`max_steps`). @default 100 */
  maxSteps: z.number().int().min(1).default(100),
  /** Reward added every step (`step_penalty`). @default -0.1 */
  stepPenalty: z.number().default(-0.1),
  /** Added when the tactic is accepted (`valid_step_reward`). @default 1 */
  validStepReward: z.number().default(1),
  /** Added when it is rejected (`invalid_step_reward`). @default -1 */
  invalidStepReward: z.number().default(-1),
  /** Added when the proof is complete (`success_reward`). @default 10 */
  successReward: z.number().default(10),
  /** Added when the check timed out (`timeout_penalty`). @default -1 */
  timeoutPenalty: z.number().default(-1),
  /** Added when `maxSteps` is reached without success (`max_steps_penalty`). @default -2 */
  maxStepsPenalty: z.number().default(-2),
  /** Header for records without imports (`default_imports`). */
  defaultImports: z.string().default(DEFAULT_IMPORTS),
  /** Characters kept of each Lean message in the render, 0 = all (`message_truncate_limit`). @default 0 */
  messageTruncateLimit: z.number().int().min(0).default(0),
  /** A tactic longer than this is an invalid action and is not sent. @default 4096 */
  maxTacticChars: z.number().int().min(16).default(4096),
});

export type LeanConfig = z.infer<typeof leanSchema>;

export const LEAN_INSTRUCTION =
  'You are proving a theorem in Lean 4 with Mathlib. Each action is one tactic (e.g. `intro h`, `nlinarith [sq_nonneg x]`, `norm_num`); ' +
  'an accepted tactic is appended to the proof, a rejected one is dropped. The proof is done when Lean reports no error and no sorry.';

const clients = new Map<string, KiminaClient>();

function clientFor(c: LeanConfig): KiminaClient {
  const key = JSON.stringify([c.serverUrl, c.apiKey, c.requestTimeout, c.httpTimeout, c.maxRetries]);
  let client = clients.get(key);
  if (!client) {
    client = new KiminaClient({
      serverUrl: c.serverUrl,
      ...(c.apiKey ? { apiKey: c.apiKey } : {}),
      requestTimeout: c.requestTimeout,
      httpTimeout: c.httpTimeout,
      maxRetries: c.maxRetries,
    });
    clients.set(key, client);
  }
  return client;
}

const datasets = new Map<string, LeanTheorem[]>();

/**
 * The theorem for (seed, mode): `seed mod n` over the split (generated: every fifth is val; a JSONL file serves both,
 * as RAGEN's).
 */
export function leanTheorem(
  c: Pick<LeanConfig, 'dataPath' | 'numTheorems'>,
  seed: number,
  mode: 'train' | 'val' = 'train',
): LeanTheorem {
  const key = c.dataPath || `generated:${c.numTheorems}`;
  let all = datasets.get(key);
  if (!all) {
    all = c.dataPath ? loadTheorems(c.dataPath) : generateTheorems(c.numTheorems);
    datasets.set(key, all);
  }
  const pool = c.dataPath ? all : all.filter((_, k) => (k % 5 === 4) === (mode === 'val'));
  return pool[((seed % pool.length) + pool.length) % pool.length]!;
}

interface LogEntry {
  action: string;
  accepted: boolean;
}

/**
 * Lean (multi-turn theorem proving; needs a Kimina Lean server).
 *
 * ## Description
 * Prove a theorem by tactics. The candidate proof is the header, the statement, the accepted tactics and
 * the new one (each indented by two spaces), checked by the Kimina server's `POST /api/check`.
 *
 * ## Action Space
 * One tactic as free text (multi-line tactics are indented line by line). Empty text, or text longer than
 * `maxTacticChars`, is an invalid action: reward `stepPenalty + invalidStepReward`, nothing sent, state unchanged.
 *
 * ## Observation
 * RAGEN's render: the step counter, the informal statement, the numbered proof transcript (last 40
 * lines), the last 5 steps with ✓/✗, and the last Lean messages ("unsolved goals" relabelled).
 *
 * ## Starting State
 * Theorem `seed mod n` of the split (generated set: every fifth theorem is val; a `dataPath` file serves both modes).
 *
 * ## Rewards
 * Per step, the sum of what applies: `stepPenalty` (-0.1); `validStepReward` (+1) if accepted (no error other
 * than "unsolved goals", no sorry) else `invalidStepReward` (-1); `successReward` (+10) when no error and no
 * sorry remain; `timeoutPenalty` (-1) on a timeout; `maxStepsPenalty` (-2) when `maxSteps` is reached.
 *
 * ## Episode End
 * Terminated on success; truncated after `maxSteps` tactics.
 *
 * ## Info
 * `success`, `actionIsValid` (well-formed tactic text), `actionIsEffective` and `accepted` (Lean accepted it;
 * RAGEN reports this as action_is_valid), `status` (valid | invalid | error | timeout | server_error),
 * `acceptedTactics`.
 *
 * ## Arguments
 * See {@link LeanConfig}. A missing server is an error at `reset` naming the URL.
 */
export class LeanEnv implements Env {
  readonly instruction = LEAN_INSTRUCTION;
  readonly legend = '';
  readonly actionNames = undefined;
  private readonly client: KiminaClient;
  private theorem: LeanTheorem | undefined;
  private tactics: string[] = [];
  private log: LogEntry[] = [];
  private last: LeanVerdict | undefined;
  private steps = 0;
  private done = false;

  constructor(readonly config: LeanConfig) {
    this.client = clientFor(config);
  }

  async reset({ seed, mode, options }: ResetOptions): Promise<ResetResult> {
    checkResetOptions('Lean', options, []);
    await this.client.ensureReachable();
    this.theorem = leanTheorem(this.config, seed, mode ?? 'train');
    this.tactics = [];
    this.log = [];
    this.last = undefined;
    this.steps = 0;
    this.done = false;
    return { observation: this.render(), info: this.info(false, true, false, 'valid') };
  }

  async step(action: string): Promise<StepResult> {
    if (this.theorem === undefined)
      throw new ResetNeededError('Lean.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError('Lean.step() called after the episode ended; call reset({seed}) to start a new one.');
    const c = this.config;
    const tactic = action.replace(/^\s*\n|\s+$/g, '');
    const bad =
      tactic.trim() === ''
        ? 'Empty tactic is not allowed.'
        : tactic.length > c.maxTacticChars
          ? `The tactic is ${tactic.length} characters long; at most ${c.maxTacticChars} are sent to Lean.`
          : undefined;
    if (bad !== undefined) {
      return {
        observation: `${this.render()}\n\nInvalid action: ${bad}`,
        reward: c.stepPenalty + c.invalidStepReward,
        terminated: false,
        truncated: false,
        info: { ...invalidInfo(bad), ...this.extra('invalid') },
      };
    }
    let verdict: LeanVerdict;
    try {
      verdict = judge(await this.client.check(this.proofText([...this.tactics, tactic])));
    } catch (err) {
      verdict = judgeFailure((err as Error).message); // logged by the client's retries; RAGEN scores it as a rejected step
    }
    this.last = verdict;
    if (verdict.accepted) this.tactics.push(tactic);
    this.log.push({ action: tactic, accepted: verdict.accepted });
    this.steps++;
    let reward = c.stepPenalty + (verdict.accepted ? c.validStepReward : c.invalidStepReward);
    if (verdict.success) reward += c.successReward;
    if (verdict.status === 'timeout') reward += c.timeoutPenalty;
    const truncated = !verdict.success && this.steps >= c.maxSteps;
    if (truncated) reward += c.maxStepsPenalty;
    this.done = verdict.success || truncated;
    return {
      observation: this.render(),
      reward,
      terminated: verdict.success,
      truncated,
      info: this.info(verdict.success, true, verdict.accepted, verdict.status),
    };
  }

  /** The proof script for `steps` (RAGEN's `_construct_proof`). */
  proofText(steps: readonly string[]): string {
    const t = this.theorem!;
    const lines: string[] = [];
    const imports = t.imports || this.config.defaultImports;
    if (imports) lines.push(...imports.trim().split('\n'), '');
    if (t.preamble) lines.push(...t.preamble.trim().split('\n'), '');
    lines.push(...t.formalStatement.trim().split('\n'));
    for (const s of steps) if (s.trim()) lines.push(...s.split('\n').map((l) => (l.trim() ? `  ${l}` : '')));
    return `${lines.join('\n')}\n`;
  }

  render(): string {
    if (this.theorem === undefined) return 'Lean environment not initialised.';
    const c = this.config;
    const out = [
      `Steps taken: ${this.steps}/${c.maxSteps} | accepted tactics: ${this.tactics.length}`,
      '',
      'Informal statement:',
    ];
    out.push(...wrap(this.theorem.naturalLanguageStatement.trim(), 88).map((l) => `  ${l}`));
    out.push('', 'Proof transcript:');
    const proof = this.proofText(this.tactics).trimEnd().split('\n');
    const start = Math.max(0, proof.length - 40);
    const width = Math.max(3, String(proof.length).length);
    if (start > 0) out.push(`  ... (${start} earlier lines omitted)`);
    proof.slice(start).forEach((l, i) => out.push(`  ${String(start + i + 1).padStart(width)} | ${l}`));
    if (this.log.length > 0) {
      out.push('', 'Proof log (latest 5 steps):');
      const first = Math.max(0, this.log.length - 5);
      if (first > 0) out.push(`  ... (${first} earlier steps omitted)`);
      this.log
        .slice(first)
        .forEach((e, i) =>
          out.push(
            `  ${String(first + i + 1).padStart(2, '0')}. ${e.action.split('\n')[0]} [${e.accepted ? '✓ accepted' : '✗ rejected'}]`,
          ),
        );
    }
    if (this.last) {
      out.push(
        '',
        'Last Lean feedback:',
        `  accepted: ${this.last.accepted}`,
        '  messages:',
        ...formatMessages(this.last.messages, '', c.messageTruncateLimit),
      );
    }
    return out.join('\n');
  }

  close(): void {}

  private info(success: boolean, valid: boolean, accepted: boolean, status: string): EnvInfo {
    return { success, actionIsValid: valid, actionIsEffective: accepted, accepted, ...this.extra(status) };
  }

  private extra(status: string): Record<string, number | string> {
    return { status, acceptedTactics: this.tactics.length, theorem: this.theorem!.name };
  }
}

function wrap(text: string, width: number): string[] {
  if (!text) return ['(not provided)'];
  const lines: string[] = [];
  let cur = '';
  for (const w of text.split(/\s+/)) {
    if (cur && cur.length + 1 + w.length > width) {
      lines.push(cur);
      cur = w;
    } else cur = cur ? `${cur} ${w}` : w;
  }
  if (cur) lines.push(cur);
  return lines;
}

export type { LeanMessage };
