// Stage filter: RAGEN's rollout filter on the raw episode scores (src/algo `filterRollouts`), ranking groups by reward
// spread, or by the policy's entropy (one forward over every row, which the score stage then reuses).
import type { Engine } from '../engine/index.js';
import { filterRollouts } from '../algo/index.js';
import { family, seconds, type StageOutput, type StepBatch, type StepSettings } from './step-batch.js';

/** The groups the filter keeps, their rows of `b.all`, and the `rollout/*` statistics of the choice. */
export async function filterStage(
  b: Pick<StepBatch, 'episodes' | 'all'>,
  s: StepSettings['filter'],
  engine: Pick<Engine, 'forward'>,
): Promise<StageOutput<'filter' | 'keptEpisodes' | 'keptRows' | 'fullForward'>> {
  const t0 = performance.now();
  const { episodes, all } = b;
  let entropy: Float64Array | undefined;
  let fullForward: StepBatch['fullForward'];
  if (s.metric === 'entropy' || s.metric === 'entropy_std') {
    // The entropy metrics need the policy's entropy before filtering: one forward over every sample, reused later.
    fullForward = await engine.forward(all, { role: 'policy', entropy: true });
    const sums = new Float64Array(episodes.length);
    const counts = new Float64Array(episodes.length);
    for (let i = 0; i < all.B * all.T; i++)
      if (all.lossMask[i]) {
        const e = all.episodeIds[Math.floor(i / all.T)]!;
        sums[e]! += fullForward.entropy![i]!;
        counts[e]!++;
      }
    entropy = sums.map((x, i) => (counts[i]! > 0 ? x / counts[i]! : 0));
  }
  const filter = filterRollouts(
    {
      rewards: Float64Array.from(episodes, (e) => e.score),
      groupIds: episodes.map((e) => `${e.tag}/${e.group}`),
      lengths: episodes.map((e) => e.turns.reduce((a, x) => a + x.tokens.length, 0)),
      ...(entropy ? { entropy } : {}),
    },
    { ...s },
  );
  const keptEpisodes = new Set(filter.keptIndices);
  const keptRows = [...all.episodeIds].map((e, i) => (keptEpisodes.has(e) ? i : -1)).filter((i) => i >= 0);
  const st = filter.stats;
  const metrics = {
    ...family('rollout', {
      in_group_reward_std: st.reward.std,
      in_group_reward_mean: st.reward.mean,
      in_group_reward_max: st.reward.max,
      chosen_in_group_reward_std: st.chosenReward.std,
      chosen_in_group_reward_mean: st.chosenReward.mean,
      filter_kept_count: st.keptCount,
      filter_kept_ratio: st.keptRatio,
      filter_zero_count: st.zeroCount,
      empty_after_filter: keptRows.length === 0 ? 1 : 0,
    }),
    ...family('train', { batch_size: keptRows.length }),
    ...family('timing_s', { filter: seconds(t0) }),
  };
  return { filter, keptEpisodes, keptRows, ...(fullForward ? { fullForward } : {}), metrics };
}
