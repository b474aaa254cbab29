// The environment contract: Gymnasium's reset/step semantics with named fields, text in and text out.
// Follows Gymnasium's core.py (Env, terminated vs truncated) and RAGEN's info conventions.
import { ConfigError, didYouMean, type RgbImage } from '../util/index.js';

/** A value or a promise of it: env methods may be async (an env may sit behind a network). */
export type MaybePromise<T> = T | Promise<T>;

/** Whether an episode is for training or validation (envs may use different data splits). */
export type EnvMode = 'train' | 'val';

/**
 * What every step and reset reports besides the observation. `success`, `actionIsValid` and
 * `actionIsEffective` are always present; envs add their own numeric fields, which become metrics.
 * `reason` says why an action was invalid.
 */
export interface EnvInfo {
  success: boolean;
  actionIsValid: boolean;
  actionIsEffective: boolean;
  reason?: string;
  [key: string]: number | boolean | string | undefined;
}

export interface ResetOptions {
  seed: number;
  mode?: EnvMode;
  options?: Record<string, unknown>;
}

/** An observation's image (`util/png.ts` defines it beside the PNG codec that carries it over the wire). */
export type { RgbImage };

/**
 * What an env's observations carry. `text`: whether the observation string describes the state (false: it is a fixed
 * sentence and the images carry the state). `image`: every observation carries exactly one RGB image of this size.
 * Envs without a declared space are text-only.
 */
export interface ObservationSpace {
  text: boolean;
  image?: { width: number; height: number };
}

export interface ResetResult {
  observation: string;
  /** The images of this observation (one for an env whose `observationSpace` declares an image). */
  images?: readonly RgbImage[];
  info: EnvInfo;
}

export interface StepResult {
  observation: string;
  /** As in `ResetResult`. */
  images?: readonly RgbImage[];
  reward: number;
  /** The episode reached a terminal state of the task (solved, fell in a hole, answered). */
  terminated: boolean;
  /** The episode was cut short from outside the task (a time limit); bootstrap from it. */
  truncated: boolean;
  info: EnvInfo;
}

/**
 * A text environment. Observations and actions are strings an LLM reads and writes.
 * Invalid actions are not exceptions: `step` returns `info.actionIsValid = false`, leaves the state
 * unchanged and says why in `info.reason`. Stepping before `reset` or after the episode ended throws
 * `ResetNeededError`.
 */
export interface Env {
  /** The task description for the system prompt (RAGEN's `env_instruction`). */
  readonly instruction: string;
  /** The legend of the symbols this env actually renders ('' if none). */
  readonly legend: string;
  /**
   * The names of the discrete actions (matched case-insensitively and exactly), or `undefined` when
   * actions are free text. May change at `reset` (Bandit renames its arms).
   */
  readonly actionNames: readonly string[] | undefined;
  /** What observations carry; undefined: text only (no images). */
  readonly observationSpace?: ObservationSpace;
  reset(options: ResetOptions): MaybePromise<ResetResult>;
  step(action: string): MaybePromise<StepResult>;
  /**
   * The current state as text. An invalid action leaves it unchanged (`checkEnv` compares it before
   * and after); per-step feedback ("Invalid action: ...") belongs in the step's observation, which
   * may be `render()` plus that feedback.
   */
  render(): string;
  close(): MaybePromise<void>;
}

/** The info of a step that did nothing, with a reason. */
export function invalidInfo(reason: string, extra: Partial<EnvInfo> = {}): EnvInfo {
  return { success: false, actionIsValid: false, actionIsEffective: false, reason, ...extra };
}

/**
 * Maps free action text to the index of a discrete action by case-insensitive exact name match
 * (surrounding whitespace ignored). Returns -1 when nothing matches.
 */
export function matchActionName(names: readonly string[], action: string): number {
  const wanted = action.trim().toLowerCase();
  for (let i = 0; i < names.length; i++) if (names[i]!.toLowerCase() === wanted) return i;
  return -1;
}

/**
 * Throws a `ConfigError` naming the nearest known key when `options` (of `reset`) holds a key the env
 * does not read: a misspelt option (`{grd: ...}`) must not silently give the seeded episode instead.
 */
export function checkResetOptions(
  envName: string,
  options: Record<string, unknown> | undefined,
  known: readonly string[],
): void {
  if (options === undefined) return; // the common case: no allocation on the reset path
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const valid = known.length > 0 ? ` Valid options: ${known.join(', ')}.` : ' It takes no reset options.';
    throw new ConfigError(`Unknown ${envName} reset option \`${key}\`.${didYouMean(key, known)}${valid}`);
  }
}
