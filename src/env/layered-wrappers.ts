// The reward, observation and recording wrappers that stack on any Env, local or remote (RemoteEnv):
// reward scaling, a penalty for invalid actions, observation truncation, JSONL episode recording.
// Follows Gymnasium's TransformReward / TransformObservation / RecordEpisodeStatistics; `wrapEnv` fixes their order.
import { appendFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeDir } from '../util/index.js';
import type { Env, EnvInfo, MaybePromise, ResetOptions, ResetResult, StepResult } from './core.js';
import { mapMaybe, Wrapper } from './wrappers.js';

/** Settings of `RewardScale`: `reward * scale + shift`, then clipped to `clip` when given. */
export interface RewardScaleOptions {
  /** @default 1 */
  scale?: number;
  /** @default 0 */
  shift?: number;
  /** `[low, high]` bounds applied last. @default none */
  clip?: readonly [number, number];
}

/** Transforms every step's reward: `clip(reward * scale + shift)`; the env's reward stays in `info.rawReward`. */
export class RewardScale extends Wrapper {
  private readonly scale: number;
  private readonly shift: number;

  constructor(
    env: Env,
    readonly options: RewardScaleOptions,
  ) {
    super(env);
    this.scale = options.scale ?? 1;
    this.shift = options.shift ?? 0;
    if (!Number.isFinite(this.scale) || !Number.isFinite(this.shift))
      throw new RangeError(`RewardScale needs finite scale and shift, got scale ${this.scale}, shift ${this.shift}`);
    const clip = options.clip;
    if (clip && !(clip[0] <= clip[1]))
      throw new RangeError(`RewardScale clip must be [low, high] with low <= high, got [${clip.join(', ')}]`);
  }

  override step(action: string): MaybePromise<StepResult> {
    return mapMaybe(this.env.step(action), (r) => {
      let reward = r.reward * this.scale + this.shift;
      const clip = this.options.clip;
      if (clip) reward = Math.min(clip[1], Math.max(clip[0], reward));
      return { ...r, reward, info: { ...r.info, rawReward: r.reward } };
    });
  }
}

/**
 * Adds `penalty` (usually negative, e.g. RAGEN's -0.1) to the reward of every step whose action the env
 * reported invalid (`info.actionIsValid === false`). The agent loop's own format penalty is for answers
 * that do not parse at all; this one is for parsed actions the env rejects, wherever the env runs.
 */
export class FormatPenalty extends Wrapper {
  constructor(
    env: Env,
    readonly penalty: number,
  ) {
    super(env);
    if (!Number.isFinite(penalty)) throw new RangeError(`FormatPenalty needs a finite penalty, got ${penalty}`);
  }

  override step(action: string): MaybePromise<StepResult> {
    return mapMaybe(this.env.step(action), (r) =>
      r.info.actionIsValid
        ? r
        : { ...r, reward: r.reward + this.penalty, info: { ...r.info, formatPenalty: this.penalty } },
    );
  }
}

/** Settings of `ObservationTruncation`. Give `maxChars`, or `maxTokens` with `countTokens`, or both. */
export interface ObservationTruncationOptions {
  /** Most characters an observation keeps. */
  maxChars?: number;
  /** Most tokens an observation keeps, counted by `countTokens` (e.g. the run's tokenizer). */
  maxTokens?: number;
  countTokens?: (text: string) => number;
  /** Which end to keep: 'head' (the start) or 'tail' (the end, e.g. the latest log lines). @default 'head' */
  keep?: 'head' | 'tail';
}

/**
 * Cuts observations (of reset and step) to a character or token budget, marking the cut with
 * `[... N characters cut]` and `info.observationTruncated = N`. `render()` stays the full state.
 */
export class ObservationTruncation extends Wrapper {
  constructor(
    env: Env,
    readonly options: ObservationTruncationOptions,
  ) {
    super(env);
    const { maxChars, maxTokens, countTokens } = options;
    if (maxChars === undefined && maxTokens === undefined)
      throw new RangeError('ObservationTruncation needs maxChars or maxTokens');
    if (maxChars !== undefined && !(Number.isInteger(maxChars) && maxChars >= 1))
      throw new RangeError(`ObservationTruncation maxChars must be an integer >= 1, got ${maxChars}`);
    if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens >= 1))
      throw new RangeError(`ObservationTruncation maxTokens must be an integer >= 1, got ${maxTokens}`);
    if (maxTokens !== undefined && countTokens === undefined)
      throw new RangeError(
        'ObservationTruncation maxTokens needs countTokens (e.g. (s) => tokenizer.encode(s).length)',
      );
  }

  override reset(options: ResetOptions): MaybePromise<ResetResult> {
    return mapMaybe(this.env.reset(options), (r) => this.cut(r));
  }

  override step(action: string): MaybePromise<StepResult> {
    return mapMaybe(this.env.step(action), (r) => this.cut(r));
  }

  /** The longest allowed prefix/suffix length of `text` (binary search on the token count). */
  private budget(text: string): number {
    let n = Math.min(text.length, this.options.maxChars ?? Infinity);
    const { maxTokens, countTokens } = this.options;
    if (maxTokens === undefined || countTokens === undefined) return n;
    const part = (k: number) => (this.options.keep === 'tail' ? text.slice(text.length - k) : text.slice(0, k));
    if (countTokens(part(n)) <= maxTokens) return n;
    let lo = 0;
    while (lo < n) {
      const mid = Math.ceil((lo + n) / 2);
      if (countTokens(part(mid)) <= maxTokens) lo = mid;
      else n = mid - 1;
    }
    return lo;
  }

  private cut<R extends ResetResult>(r: R): R {
    const text = r.observation;
    const keep = this.budget(text);
    if (keep >= text.length) return r;
    const removed = text.length - keep;
    const marker = `[... ${removed} characters cut]`;
    const observation =
      this.options.keep === 'tail' ? `${marker}\n${text.slice(removed)}` : `${text.slice(0, keep)}\n${marker}`;
    return { ...r, observation, info: { ...r.info, observationTruncated: removed } };
  }
}

/** One line of an `EpisodeRecorder` file. */
export interface RecordedEpisode {
  seed: number;
  mode: string;
  options?: Record<string, unknown>;
  reset: { observation: string; info: EnvInfo };
  steps: {
    action: string;
    observation: string;
    reward: number;
    terminated: boolean;
    truncated: boolean;
    info: EnvInfo;
  }[];
  /** Sum of the step rewards. */
  episodeReturn: number;
  /** false when the episode was left unfinished (a new reset or close came first). */
  finished: boolean;
}

/**
 * Appends each episode as one JSON line to `path` when it ends (terminated or truncated), or with
 * `finished: false` when a reset or close interrupts it. Records what the agent saw (wrappers inside it applied).
 */
export class EpisodeRecorder extends Wrapper {
  private current: RecordedEpisode | undefined;

  constructor(
    env: Env,
    readonly path: string,
  ) {
    super(env);
    makeDir(dirname(path), 'create the folder of the episode recording');
  }

  override reset(options: ResetOptions): MaybePromise<ResetResult> {
    this.flush(false);
    return mapMaybe(this.env.reset(options), (r) => {
      this.current = {
        seed: options.seed,
        mode: options.mode ?? 'train',
        ...(options.options ? { options: options.options } : {}),
        reset: { observation: r.observation, info: r.info },
        steps: [],
        episodeReturn: 0,
        finished: false,
      };
      return r;
    });
  }

  override step(action: string): MaybePromise<StepResult> {
    return mapMaybe(this.env.step(action), (r) => {
      const ep = this.current;
      if (ep) {
        ep.steps.push({ action, ...r });
        ep.episodeReturn += r.reward;
        if (r.terminated || r.truncated) this.flush(true);
      }
      return r;
    });
  }

  override close(): MaybePromise<void> {
    this.flush(false);
    return this.env.close();
  }

  private flush(finished: boolean): void {
    if (!this.current) return;
    appendFileSync(this.path, `${JSON.stringify({ ...this.current, finished })}\n`);
    this.current = undefined;
  }
}
