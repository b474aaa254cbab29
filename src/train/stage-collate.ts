// Stage collate: reward normalisation (each episode's score, src/algo `normalizeRewards`) written into its samples'
// token rewards, then every sample padded into one token-aligned (B, T) batch.
import { collate, type RolloutBatch } from '../agent/index.js';
import { normalizeRewards } from '../algo/index.js';
import { applyEpisodeScores } from './batch.js';
import type { StageOutput, StepSettings } from './step-batch.js';

/** The rollout's samples, their rewards normalised per `s.rewardNorm`, padded with `padTokenId`. */
export function collateStage(
  rollout: RolloutBatch,
  s: StepSettings['collate'],
  padTokenId: number,
): StageOutput<'episodes' | 'all'> {
  const episodes = rollout.episodes;
  let samples = rollout.samples;
  if (s.rewardNorm.method !== 'identity') {
    const scores = Float64Array.from(episodes, (e) => e.score);
    const normalized = normalizeRewards({
      scores,
      grouping: s.rewardNorm.grouping,
      method: s.rewardNorm.method,
      groupIds: episodes.map((e) => `${e.tag}/${e.group}`),
      tags: episodes.map((e) => e.tag),
    });
    samples = applyEpisodeScores(samples, scores, normalized, s.scoreBy);
  }
  return { episodes, all: collate(samples, padTokenId), metrics: {} };
}
