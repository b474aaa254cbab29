// Wrappers for what is not an env's business: call order, a cap on actions per episode, episode statistics (the base
// classes; reward, observation and recording wrappers are in layered-wrappers.ts, their order in wrap-env.ts).
// Follows Gymnasium's wrappers (OrderEnforcing, TimeLimit, RecordEpisodeStatistics); sync envs stay sync.
import { ResetNeededError } from '../util/index.js';
import type { Env, EnvInfo, MaybePromise, ResetOptions, ResetResult, StepResult } from './core.js';

/** Applies `f` to a value or to the value of a promise, without making sync results async. */
export function mapMaybe<T, U>(x: MaybePromise<T>, f: (value: T) => U): MaybePromise<U> {
  return x instanceof Promise ? x.then(f) : f(x);
}

/** A wrapper forwards everything to the env it wraps; subclasses override what they change. */
export class Wrapper implements Env {
  constructor(readonly env: Env) {}

  get instruction(): string {
    return this.env.instruction;
  }
  get legend(): string {
    return this.env.legend;
  }
  get actionNames(): readonly string[] | undefined {
    return this.env.actionNames;
  }
  /** The innermost env, under every wrapper. */
  get unwrapped(): Env {
    return this.env instanceof Wrapper ? this.env.unwrapped : this.env;
  }
  reset(options: ResetOptions): MaybePromise<ResetResult> {
    return this.env.reset(options);
  }
  step(action: string): MaybePromise<StepResult> {
    return this.env.step(action);
  }
  render(): string {
    return this.env.render();
  }
  close(): MaybePromise<void> {
    return this.env.close();
  }
}

/**
 * Throws `ResetNeededError` on `step` before the first `reset` and after the episode ended
 * (terminated or truncated), whatever the wrapped env does. Built-in envs throw too; this wrapper
 * guarantees it for third-party ones.
 */
export class OrderEnforcing extends Wrapper {
  private state: 'new' | 'running' | 'ended' = 'new';

  override reset(options: ResetOptions): MaybePromise<ResetResult> {
    return mapMaybe(this.env.reset(options), (r) => {
      this.state = 'running';
      return r;
    });
  }

  override step(action: string): MaybePromise<StepResult> {
    if (this.state === 'new')
      throw new ResetNeededError('Cannot call step() before reset(): call reset({seed}) first.');
    if (this.state === 'ended') {
      throw new ResetNeededError(
        'Cannot call step() after the episode ended (terminated or truncated): call reset({seed}) to start a new one.',
      );
    }
    return mapMaybe(this.env.step(action), (r) => {
      if (r.terminated || r.truncated) this.state = 'ended';
      return r;
    });
  }
}

/**
 * Ends an episode after `maxActions` steps by setting `truncated` (never `terminated`: the task did
 * not end, so a learner should bootstrap). RAGEN's `max_actions_per_traj`. Every step counts,
 * invalid ones included, as in RAGEN's manager.
 */
export class TimeLimit extends Wrapper {
  private elapsed = 0;

  constructor(
    env: Env,
    readonly maxActions: number,
  ) {
    super(env);
    if (!Number.isInteger(maxActions) || maxActions < 1)
      throw new RangeError(`TimeLimit needs maxActions >= 1 (an integer), got ${maxActions}`);
  }

  /** Steps taken in the current episode. */
  get actionsTaken(): number {
    return this.elapsed;
  }

  override reset(options: ResetOptions): MaybePromise<ResetResult> {
    this.elapsed = 0;
    return this.env.reset(options);
  }

  override step(action: string): MaybePromise<StepResult> {
    return mapMaybe(this.env.step(action), (r) => {
      this.elapsed++;
      if (this.elapsed >= this.maxActions && !r.terminated && !r.truncated) return { ...r, truncated: true };
      return r;
    });
  }
}

/**
 * Adds the episode's statistics to the info of its last step (terminated or truncated):
 * `episodeReturn` (sum of rewards), `episodeLength` (steps) and `episodeSuccess` (the last step's
 * `success`). Gymnasium's RecordEpisodeStatistics with flat keys, since info values are scalars.
 */
export class EpisodeStatistics extends Wrapper {
  private episodeReturn = 0;
  private episodeLength = 0;

  override reset(options: ResetOptions): MaybePromise<ResetResult> {
    this.episodeReturn = 0;
    this.episodeLength = 0;
    return this.env.reset(options);
  }

  override step(action: string): MaybePromise<StepResult> {
    return mapMaybe(this.env.step(action), (r) => {
      this.episodeReturn += r.reward;
      this.episodeLength++;
      if (!r.terminated && !r.truncated) return r;
      const info: EnvInfo = {
        ...r.info,
        episodeReturn: this.episodeReturn,
        episodeLength: this.episodeLength,
        episodeSuccess: r.info.success,
      };
      return { ...r, info };
    });
  }
}
