// rollouts/step-N.jsonl: the step's episodes in the one on-disk episode format (src/agent/trajectories.ts), with
// the filter's verdict and each turn's advantage (the mean over the turn's tokens; null when the group was dropped).
import { episodeRecord, type AgentConfig, type Episode, type EpisodeRecord, type TokenBatch } from '../agent/index.js';

/** Mean advantage per (episode, turn) over the loss tokens of the kept batch. */
export function turnAdvantages(tokens: TokenBatch, advantages: ArrayLike<number>): Map<number, Map<number, number>> {
  const sums = new Map<number, Map<number, [number, number]>>();
  for (let b = 0; b < tokens.B; b++) {
    const ep = tokens.episodeIds[b]!;
    let m = sums.get(ep);
    if (!m) sums.set(ep, (m = new Map()));
    for (let t = 0; t < tokens.T; t++) {
      const i = b * tokens.T + t;
      if (!tokens.lossMask[i]) continue;
      const turn = tokens.turnIds[i]!;
      const acc = m.get(turn) ?? [0, 0];
      acc[0] += advantages[i]!;
      acc[1]++;
      m.set(turn, acc);
    }
  }
  return new Map([...sums].map(([ep, m]) => [ep, new Map([...m].map(([turn, [s, n]]) => [turn, s / n]))]));
}

/** The records of the first `limit` episodes (null: all); `kept` says which episodes survived the filter. */
export function episodeRecords(
  step: number,
  episodes: readonly Episode[],
  kept: ReadonlySet<number>,
  advantages: Map<number, Map<number, number>>,
  limit: number | null,
  agent: Pick<AgentConfig, 'enableThink'>,
): EpisodeRecord[] {
  return episodes.slice(0, limit ?? episodes.length).map((e) =>
    episodeRecord(e, agent, { step, kept: kept.has(e.index), advantage: (turn) => advantages.get(e.index)?.get(turn) }),
  );
}
