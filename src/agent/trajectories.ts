// Trajectories as JSONL (RAGEN's eval output): one line per episode, OpenAI `messages` plus metadata.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AgentConfig } from './config.js';
import { episodeMessages, type Episode } from './rollout.js';

/** One JSONL record: `{custom_id, messages, metadata}`. */
export interface TrajectoryRecord {
  custom_id: string;
  messages: { role: string; content: string }[];
  metadata: {
    env: string;
    seed: number;
    group: number;
    member: number;
    turns: number;
    /** Env reward of each turn. */
    rewards: number[];
    /** Format penalty of each turn. */
    penalties: number[];
    /** Actions executed each turn. */
    actions: string[][];
    total_reward: number;
    score: number;
    success: boolean;
    end_reason: string;
    num_actions: number;
    context_truncations: number;
    /** Sampled tokens over the episode. */
    n_tokens: number;
  };
}

/** The JSONL record of an episode. */
export function trajectoryRecord(e: Episode, cfg: Pick<AgentConfig, 'enableThink'>): TrajectoryRecord {
  return {
    custom_id: `${e.tag}-seed${e.seed}-g${e.group}-m${e.member}`,
    messages: episodeMessages(e, cfg),
    metadata: {
      env: e.tag,
      seed: e.seed,
      group: e.group,
      member: e.member,
      turns: e.turns.length,
      rewards: e.turns.map((t) => t.reward),
      penalties: e.turns.map((t) => t.penalty),
      actions: e.turns.map((t) => t.actions.filter((a) => a.executed).map((a) => a.action)),
      total_reward: e.envReturn,
      score: e.score,
      success: e.success,
      end_reason: e.endReason,
      num_actions: e.numActions,
      context_truncations: e.contextTruncations,
      n_tokens: e.turns.reduce((a, t) => a + t.tokens.length, 0),
    },
  };
}

/** Write (or append to) a JSONL file of episodes; creates the folder. */
export function writeTrajectories(path: string, episodes: readonly Episode[], cfg: Pick<AgentConfig, 'enableThink'>, append = false): void {
  mkdirSync(dirname(path), { recursive: true });
  const text = episodes.map((e) => JSON.stringify(trajectoryRecord(e, cfg))).join('\n') + (episodes.length ? '\n' : '');
  if (append) appendFileSync(path, text);
  else writeFileSync(path, text);
}
