// rollouts/step-N.jsonl: the step's episodes in the one on-disk episode format (src/agent/trajectories.ts), with
// the filter's verdict and each turn's advantage (the mean over the turn's tokens, and per token with its text; null
// when the group was dropped).
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

/** Per (episode, turn): the loss tokens' ids and advantages, in sequence order. */
export function tokenAdvantages(
  tokens: TokenBatch,
  advantages: ArrayLike<number>,
): Map<number, Map<number, { ids: number[]; advantages: number[] }>> {
  const out = new Map<number, Map<number, { ids: number[]; advantages: number[] }>>();
  for (let b = 0; b < tokens.B; b++) {
    const ep = tokens.episodeIds[b]!;
    let m = out.get(ep);
    if (!m) out.set(ep, (m = new Map()));
    for (let t = 0; t < tokens.T; t++) {
      const i = b * tokens.T + t;
      if (!tokens.lossMask[i]) continue;
      const turn = tokens.turnIds[i]!;
      let acc = m.get(turn);
      if (!acc) m.set(turn, (acc = { ids: [], advantages: [] }));
      acc.ids.push(tokens.ids[i]!);
      acc.advantages.push(advantages[i]!);
    }
  }
  return out;
}

/** The records of the first `limit` episodes (null: all); `kept` says which episodes survived the filter. */
export function episodeRecords(
  step: number,
  episodes: readonly Episode[],
  kept: ReadonlySet<number>,
  advantages: Map<number, Map<number, number>>,
  limit: number | null,
  agent: Pick<AgentConfig, 'enableThink'>,
  perToken?: { tokens: ReturnType<typeof tokenAdvantages>; decode: (id: number) => string },
): EpisodeRecord[] {
  return episodes.slice(0, limit ?? episodes.length).map((e) =>
    episodeRecord(e, agent, {
      step,
      kept: kept.has(e.index),
      advantage: (turn) => advantages.get(e.index)?.get(turn),
      tokens: (turn) => {
        const got = perToken?.tokens.get(e.index)?.get(turn);
        const sampled = e.turns.find((t) => t.turn === turn)?.tokens;
        // Only when the trained tokens are exactly the sampled ones (else the colours would sit on the wrong text).
        if (!got || !sampled || got.ids.length !== sampled.length || got.ids.some((id, i) => id !== sampled[i]))
          return undefined;
        return { text: got.ids.map((id) => perToken!.decode(id)), advantages: got.advantages };
      },
    }),
  );
}
