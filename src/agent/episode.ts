// One env's episode as the rollout loop keeps it (every turn, its prompt and sampled ids): the type the rollout
// writes and the per-tag metrics read, below both so neither imports the other.
import type { EnvInfo } from '../env/index.js';
import type { Generation } from '../engine/index.js';
import type { TurnStep } from './env-groups.js';

/** One turn of an episode, everything kept. */
export interface EpisodeTurn {
  /** 0-based. */
  turn: number;
  /** The observation shown at the start of the turn. */
  observation: string;
  /** The user message of the turn as `full` mode shows it (single_turn's summary prompt is in `promptIds`). */
  userText: string;
  /** The exact prompt ids the policy saw (template + prefill). */
  promptIds: number[];
  /** The decoded sampled text, without the prefilled tag and a final stop token. */
  response: string;
  /** The reasoning and answer parsed from it ('' when unparsable). */
  think: string;
  answer: string;
  /** Why the response did not parse, if it did not. */
  formatError: string | undefined;
  /** The parsed actions (at most maxActionsPerTurn) and what each did. */
  actions: TurnStep['actions'];
  /** Parsed actions beyond the per-turn limit (dropped). */
  droppedActions: number;
  /** Sum of the env rewards of the turn. */
  reward: number;
  /** The penalties of this turn: format (0 or `formatPenalty`), think length and step (`agent.*Penalty`). */
  penalty: number;
  info: EnvInfo;
  /** Sampled ids (all trained on in the turn's own sample), their log-probs, why sampling stopped. */
  tokens: number[];
  logprobs: number[];
  finishReason: Generation['finishReason'];
  /** An agent program's turn (the gateway): its chat call as sent and the reply it got; absent for built-in turns. */
  agentCall?: AgentCall;
}

/** One chat call of an agent program, in OpenAI chat shapes: the request as the program sent it, the reply it got. */
export interface AgentCall {
  /** The request's `messages` (tool calls and tool results included) as sent. */
  messages: unknown[];
  /** The request's `tools`; null when the call offered none. */
  tools: unknown[] | null;
  /** The assistant message the gateway answered: the text before any tool call, and the parsed calls. */
  reply: {
    role: 'assistant';
    content: string | null;
    tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  };
}

/** Why an episode ended. */
export type EndReason = 'terminated' | 'truncated' | 'action_cap' | 'max_turns' | 'context_full';

/** One env's episode. */
export interface Episode {
  index: number;
  tag: string;
  group: number;
  member: number;
  seed: number;
  system: string;
  turns: EpisodeTurn[];
  success: boolean;
  /** Sum of env rewards (RAGEN's episodic_return). */
  envReturn: number;
  /** envReturn + format penalties: what the trainer's reward is. */
  score: number;
  numActions: number;
  endReason: EndReason;
  /**
   * Whole turns dropped from the context to fit `maxContextTokens`; a `context_full` end counts the turn it could not
   * prompt.
   */
  contextTruncations: number;
  finalObservation: string;
}
