// wrapEnv: stacks the wrappers an options object asks for in one documented order, the same for local and
// remote envs (innermost first): TimeLimit, RewardScale, FormatPenalty, ObservationTruncation,
// EpisodeStatistics, EpisodeRecorder, and OrderEnforcing outermost.
import type { Env } from './core.js';
import {
  EpisodeRecorder,
  FormatPenalty,
  ObservationTruncation,
  RewardScale,
  type ObservationTruncationOptions,
  type RewardScaleOptions,
} from './layered-wrappers.js';
import { EpisodeStatistics, OrderEnforcing, TimeLimit } from './wrappers.js';

/** Options of `wrapEnv` / `makeEnv`. Without any, `makeEnv` returns the bare env. */
export interface WrapOptions {
  /** Truncate episodes after this many actions (`TimeLimit`). @default no limit */
  maxActions?: number;
  /** `reward * scale + shift`, clipped (`RewardScale`); sees the env's reward after the time limit. @default none */
  rewardScale?: RewardScaleOptions;
  /** Added to the reward of actions the env reports invalid (`FormatPenalty`), after scaling. @default none */
  formatPenalty?: number;
  /** Cut observations to a character or token budget (`ObservationTruncation`). @default none */
  observation?: ObservationTruncationOptions;
  /**
   * Add `episodeReturn`, `episodeLength`, `episodeSuccess` to the last info (`EpisodeStatistics`), over the final
   * rewards. @default false
   */
  episodeStatistics?: boolean;
  /** Append each episode, as the agent saw it, to this JSONL file (`EpisodeRecorder`). @default none */
  recordEpisodes?: string;
}

/**
 * Wraps `env` in the wrappers `options` ask for, innermost first: TimeLimit, RewardScale, FormatPenalty,
 * ObservationTruncation, EpisodeStatistics, EpisodeRecorder, and always OrderEnforcing outermost. So the
 * penalty is not scaled, statistics and recordings see the final rewards and observations, and call-order
 * errors come before any wrapper runs.
 */
export function wrapEnv(env: Env, options: WrapOptions = {}): Env {
  let wrapped = env;
  if (options.maxActions !== undefined) wrapped = new TimeLimit(wrapped, options.maxActions);
  if (options.rewardScale !== undefined) wrapped = new RewardScale(wrapped, options.rewardScale);
  if (options.formatPenalty !== undefined) wrapped = new FormatPenalty(wrapped, options.formatPenalty);
  if (options.observation !== undefined) wrapped = new ObservationTruncation(wrapped, options.observation);
  if (options.episodeStatistics) wrapped = new EpisodeStatistics(wrapped);
  if (options.recordEpisodes !== undefined) wrapped = new EpisodeRecorder(wrapped, options.recordEpisodes);
  return new OrderEnforcing(wrapped);
}
