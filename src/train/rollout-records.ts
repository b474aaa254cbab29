// rollouts/step-N.jsonl: one line per episode with every turn's observation, reasoning, answer, actions,
// reward and advantage (the mean over the turn's tokens; null when the filter dropped the episode's group).
import type { Episode, TokenBatch } from '../agent/index.js';

/** One turn of a saved trajectory. */
export interface TurnRecord {
  turn: number;
  observation: string;
  /** The sampled text after the prefilled tag. */
  response: string;
  think: string;
  answer: string;
  /** Actions the env executed this turn. */
  actions: string[];
  reward: number;
  /** Format penalty (0 or `agent.formatPenalty`). */
  penalty: number;
  formatError: string | null;
  /** Mean advantage over the turn's trained tokens; null if the episode was filtered out. */
  advantage: number | null;
  tokens: number;
}

/** One episode of a step, as written to `rollouts/step-N.jsonl`. */
export interface EpisodeRecord {
  step: number;
  tag: string;
  seed: number;
  group: number;
  member: number;
  success: boolean;
  score: number;
  endReason: string;
  /** Whether the rollout filter kept the episode's group. */
  kept: boolean;
  turns: TurnRecord[];
}

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
export function episodeRecords(step: number, episodes: readonly Episode[], kept: ReadonlySet<number>, advantages: Map<number, Map<number, number>>, limit: number | null): EpisodeRecord[] {
  return episodes.slice(0, limit ?? episodes.length).map((e) => ({
    step,
    tag: e.tag,
    seed: e.seed,
    group: e.group,
    member: e.member,
    success: e.success,
    score: e.score,
    endReason: e.endReason,
    kept: kept.has(e.index),
    turns: e.turns.map((t) => ({
      turn: t.turn,
      observation: t.observation,
      response: t.response,
      think: t.think,
      answer: t.answer,
      actions: t.actions.filter((a) => a.executed).map((a) => a.action),
      reward: t.reward,
      penalty: t.penalty,
      formatError: t.formatError ?? null,
      advantage: advantages.get(e.index)?.get(t.turn) ?? null,
      tokens: t.tokens.length,
    })),
  }));
}
