// One entry point for every advantage estimator by its literature name, with each estimator's
// default whitening (as RAGEN's `compute_advantage` routes them to veRL/RAGEN functions).
import { assertNever, ConfigError } from '../util/index.js';
import { biLevelGae, gae, maskedWhiten } from './gae.js';
import {
  grpoAdvantage,
  reinforcePPAdvantage,
  reinforcePPBaselineAdvantage,
  rlooAdvantage,
  type GroupKeys,
} from './outcome-advantage.js';
import { parseName, type TokenMask, type Nums } from './shape.js';

/**
 * Advantage estimators. `bi_level_gae` is RAGEN's `gae` + `bi_level_gae: true`; `dr_grpo` is `grpo` +
 * `norm_adv_by_std_in_grpo: false`.
 */
export type AdvEstimator =
  'gae' | 'bi_level_gae' | 'grpo' | 'dr_grpo' | 'rloo' | 'reinforce_pp' | 'reinforce_pp_baseline';

/** Every AdvEstimator, for config validation. */
export const ADV_ESTIMATORS: readonly AdvEstimator[] = [
  'gae',
  'bi_level_gae',
  'grpo',
  'dr_grpo',
  'rloo',
  'reinforce_pp',
  'reinforce_pp_baseline',
];

/** Parses an estimator name; accepts veRL's spellings (`reinforce_plus_plus`, ...). */
export function parseAdvEstimator(name: string): AdvEstimator {
  return parseName('advantage estimator', name, ADV_ESTIMATORS, {
    reinforce_plus_plus: 'reinforce_pp',
    reinforce_plus_plus_baseline: 'reinforce_pp_baseline',
    'dr.grpo': 'dr_grpo',
    drgrpo: 'dr_grpo',
  });
}

/** Whether the estimator needs critic values. */
export function needsCritic(estimator: AdvEstimator): boolean {
  switch (estimator) {
    case 'gae':
    case 'bi_level_gae':
      return true;
    case 'grpo':
    case 'dr_grpo':
    case 'rloo':
    case 'reinforce_pp':
    case 'reinforce_pp_baseline':
      return false;
    default:
      return assertNever(estimator, 'advantage estimator');
  }
}

/**
 * Settings of `computeAdvantage`: the config's `algo.advEstimator`, `gamma`, `lambda`, `gammaTurn` (their defaults live
 * there, src/config), and finer knobs.
 */
export interface AdvantageConfig {
  advEstimator: AdvEstimator;
  /** Token-level discount γ. */
  gamma: number;
  /** Token-level GAE λ. */
  lambda: number;
  /** Turn-level discount of bi_level_gae (RAGEN `high_level_gamma`). */
  gammaTurn: number;
  /** Turn-level λ of bi_level_gae. @default lambda */
  lambdaTurn?: number;
  /** GRPO's std epsilon. @default 1e-6 */
  eps?: number;
  /**
   * Whiten advantages over the batch's loss tokens. @default true for gae, bi_level_gae, reinforce_pp,
   * reinforce_pp_baseline; false otherwise
   */
  normAdvantages?: boolean;
}

/** Inputs of `computeAdvantage`: a padded (B, T) batch. */
export interface AdvantageInput {
  /** (B, T) token rewards (outcome estimators sum them per sequence). */
  rewards: Nums;
  /** (B, T) loss mask. */
  mask: TokenMask;
  B: number;
  T: number;
  /** (B, T) critic values; required by gae and bi_level_gae. */
  values?: Nums;
  /** Per sequence: its group; required by grpo, dr_grpo, rloo, reinforce_pp_baseline. */
  groupIds?: GroupKeys;
  /** Per sequence: its episode (per-turn layouts), so each episode counts once in group stats. */
  episodeIds?: GroupKeys;
  /** (B, T) turn index per token (-1 = none) for bi_level_gae; default: runs of loss tokens. */
  turnIds?: Nums;
}

/** Result of `computeAdvantage`. */
export interface AdvantageResult {
  /** (B, T) advantages, 0 off the mask. */
  advantages: Float64Array;
  /**
   * (B, T) value targets A + V (gae, bi_level_gae); for the critic-free estimators, the advantages before whitening
   * (REINFORCE++: its discounted returns). 0 off the mask.
   */
  returns: Float64Array;
  /** Per sequence: its group's reward std (grpo / dr_grpo only), for `softReweightByGroupStd`. */
  groupStd?: Float64Array;
}

function need<X>(x: X | undefined, what: string, estimator: AdvEstimator): X {
  if (x === undefined)
    throw new ConfigError(`advantage estimator \`${estimator}\` needs \`${what}\`; pass it in the input.`);
  return x;
}

/** Computes advantages and returns with the named estimator (see each function for its source). */
export function computeAdvantage(input: AdvantageInput, config: AdvantageConfig): AdvantageResult {
  const { rewards, mask, B, T } = input;
  const est = config.advEstimator;
  const { gamma, lambda } = config;
  let out: AdvantageResult;
  let whitenByDefault: boolean;
  switch (est) {
    case 'gae':
      out = gae({ rewards, values: need(input.values, 'values', est), mask, B, T, gamma, lambda });
      whitenByDefault = true;
      break;
    case 'bi_level_gae':
      out = biLevelGae({
        rewards,
        values: need(input.values, 'values', est),
        mask,
        B,
        T,
        gamma,
        lambda,
        gammaTurn: config.gammaTurn,
        lambdaTurn: config.lambdaTurn ?? lambda,
        ...(input.turnIds !== undefined ? { turnIds: input.turnIds } : {}),
      });
      whitenByDefault = true;
      break;
    case 'grpo':
    case 'dr_grpo': {
      const r = grpoAdvantage({
        rewards,
        mask,
        B,
        T,
        groupIds: need(input.groupIds, 'groupIds', est),
        ...(input.episodeIds !== undefined ? { episodeIds: input.episodeIds } : {}),
        eps: config.eps ?? 1e-6,
        normByStd: est === 'grpo',
      });
      out = { advantages: r.advantages, returns: r.returns, groupStd: r.groupStd };
      whitenByDefault = false;
      break;
    }
    case 'rloo':
      out = rlooAdvantage({
        rewards,
        mask,
        B,
        T,
        groupIds: need(input.groupIds, 'groupIds', est),
        ...(input.episodeIds !== undefined ? { episodeIds: input.episodeIds } : {}),
      });
      whitenByDefault = false;
      break;
    case 'reinforce_pp':
      out = reinforcePPAdvantage({ rewards, mask, B, T, gamma });
      whitenByDefault = true;
      break;
    case 'reinforce_pp_baseline':
      out = reinforcePPBaselineAdvantage({
        rewards,
        mask,
        B,
        T,
        groupIds: need(input.groupIds, 'groupIds', est),
        ...(input.episodeIds !== undefined ? { episodeIds: input.episodeIds } : {}),
      });
      whitenByDefault = true;
      break;
    default:
      return assertNever(est, 'advantage estimator');
  }
  if (config.normAdvantages ?? whitenByDefault) out.advantages = maskedWhiten(out.advantages, mask);
  return out;
}
