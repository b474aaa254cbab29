// Episodes on disk: the one JSONL record (snake_case) that both `rollouts/step-N.jsonl` (the trainer) and
// `ragen eval --out` write, one line per episode: summary fields, every turn, and the OpenAI `messages`.
import { appendFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { encodePng, makeDir, withFileErrors, writeFileAt, type RgbImage } from '../util/index.js';
import type { AgentConfig } from './config.js';
import { episodeMessages, type AgentCall, type EndReason, type Episode } from './rollout.js';

/** One turn of a saved episode. */
export interface TurnRecord {
  turn: number;
  /** The env's observation shown this turn (built-in turns only, as `think`, `answer` and `actions`). */
  observation?: string;
  /** The observation's images as PNG data: URLs (a visual env's turns only; the dashboard shows them). */
  observation_images?: string[];
  /** The sampled text after the prefilled tag. */
  response: string;
  think?: string;
  answer?: string;
  /** Actions the env executed this turn. */
  actions?: string[];
  /** Reward of the turn: the env's, or an agent program's on its last call. */
  reward: number;
  /** The turn's penalties: format (0 or `agent.formatPenalty`), think length and step. */
  penalty: number;
  format_error: string | null;
  /** Mean advantage over the turn's trained tokens; null outside training or when the filter dropped the group. */
  advantage: number | null;
  /** Sampled tokens of the turn. */
  tokens: number;
  /** Each sampled token's text (decoded alone), aligned with `token_advantages`; null outside training. */
  token_text: string[] | null;
  /** Advantage of each sampled token as trained on; null outside training or when the filter dropped the group. */
  token_advantages: number[] | null;
  /**
   * An agent program's turn (the gateway): the chat call's messages and tools as the program sent them, and the reply
   * it got (content and tool_calls). Absent for built-in turns, whose `observation` and `actions` say it instead.
   */
  call?: AgentCall;
}

/** One episode as a JSONL line. */
export interface EpisodeRecord {
  /** `<env>-seed<seed>-g<group>-m<member>`. */
  custom_id: string;
  /** The training step that sampled it; null for evaluation. */
  step: number | null;
  env: string;
  seed: number;
  group: number;
  member: number;
  success: boolean;
  /** Sum of env rewards. */
  total_reward: number;
  /** total_reward plus format penalties: the trainer's reward. */
  score: number;
  end_reason: EndReason;
  num_actions: number;
  context_truncations: number;
  /** Sampled tokens over the episode. */
  n_tokens: number;
  /** Whether the rollout filter kept the episode's group; null for evaluation. */
  kept: boolean | null;
  turns: TurnRecord[];
  /**
   * The built-in loop's conversation as OpenAI-style messages (system, then user / assistant per turn); empty for an
   * agent program's episode, whose turns carry each call as sent (`call`).
   */
  messages: { role: string; content: string }[];
}

/** What training adds to a record: the step, the filter's verdict, and the mean advantage of each turn. */
export interface TrainingFields {
  step: number;
  kept: boolean;
  /** Mean advantage of turn `t` (undefined: not trained on). */
  advantage(turn: number): number | undefined;
  /** Text and advantage of each sampled token of turn `t` (undefined: not trained on). */
  tokens?(turn: number): { text: string[]; advantages: number[] } | undefined;
}

/** The record of an episode; `training` is absent for evaluation. */
export function episodeRecord(
  e: Episode,
  cfg: Pick<AgentConfig, 'enableThink'>,
  training?: TrainingFields,
): EpisodeRecord {
  return {
    custom_id: `${e.tag}-seed${e.seed}-g${e.group}-m${e.member}`,
    step: training?.step ?? null,
    env: e.tag,
    seed: e.seed,
    group: e.group,
    member: e.member,
    success: e.success,
    total_reward: e.envReturn,
    score: e.score,
    end_reason: e.endReason,
    num_actions: e.numActions,
    context_truncations: e.loop?.contextTruncations ?? 0,
    n_tokens: e.turns.reduce((a, t) => a + t.tokens.length, 0),
    kept: training?.kept ?? null,
    // key order as records have always had it: observation, response, think, answer, actions
    turns: e.turns.map((t) => ({
      turn: t.turn,
      ...(t.loop ? { observation: t.loop.observation } : {}),
      ...(t.loop?.images?.length ? { observation_images: t.loop.images.map(pngDataUrl) } : {}),
      response: t.response,
      ...(t.loop
        ? {
            think: t.loop.think,
            answer: t.loop.answer,
            actions: t.loop.actions.filter((a) => a.executed).map((a) => a.action),
          }
        : {}),
      reward: t.reward,
      penalty: t.penalty,
      format_error: t.formatError ?? null,
      advantage: training?.advantage(t.turn) ?? null,
      tokens: t.tokens.length,
      token_text: training?.tokens?.(t.turn)?.text ?? null,
      token_advantages: training?.tokens?.(t.turn)?.advantages ?? null,
      ...(t.agentCall ? { call: t.agentCall } : {}),
    })),
    messages: episodeMessages(e, cfg),
  };
}

/** Write (or append to) a JSONL file of episode records; creates the folder. */
export function writeEpisodeRecords(path: string, records: readonly EpisodeRecord[], append = false): void {
  const text = records.map((r) => `${JSON.stringify(r)}\n`).join('');
  if (!append) return writeFileAt(path, text, 'write the episode records');
  makeDir(dirname(path), 'write the episode records');
  withFileErrors('write the episode records', path, () => appendFileSync(path, text));
}

/** An image as a PNG data: URL (what a browser shows and an OpenAI client sends). */
function pngDataUrl(image: RgbImage): string {
  return `data:image/png;base64,${Buffer.from(encodePng(image)).toString('base64')}`;
}
