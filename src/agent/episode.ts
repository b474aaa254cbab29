// One episode as a producer keeps it (every turn, its prompt and sampled ids): a core that the built-in rollout loop and
// the gateway's agent programs both fill, and each producer's own details as optional parts. The rollout writes it and
// the per-tag metrics read it; it sits below both so neither imports the other.
import type { EnvInfo } from '../env/index.js';
import type { RgbImage } from '../util/index.js';
import type { Generation } from '../engine/index.js';
import type { TurnStep } from './env-groups.js';

/**
 * One turn of an episode as every producer records it (the built-in loop, an agent program through the gateway): the
 * exact prompt and sampled ids, their log-probs, the reward. What only one producer knows is in its optional part.
 */
export interface EpisodeTurn {
  /** 0-based. */
  turn: number;
  /** The exact prompt ids the policy saw (template + prefill). */
  promptIds: number[];
  /** The images `promptIds`' vision tokens stand for, in order (a vision-language policy's prompt); absent otherwise. */
  promptImages?: readonly RgbImage[];
  /** Sampled ids (all trained on in the turn's own sample), their log-probs, why sampling stopped. */
  tokens: number[];
  logprobs: number[];
  finishReason: Generation['finishReason'];
  /** The decoded sampled text, without a prefilled tag and a final stop token. */
  response: string;
  /** The turn's reward: the env's (the built-in loop), or the program's on its last call (an agent program). */
  reward: number;
  /** The penalties of this turn: format (0 or `formatPenalty`), think length and step (`agent.*Penalty`). */
  penalty: number;
  /** Why the response did not parse (a reply or a tool call), if it did not. */
  formatError: string | undefined;
  info: EnvInfo;
  /** The built-in loop's turn: the env's side of it. Absent for an agent program's turns. */
  loop?: LoopTurn;
  /** An agent program's turn (the gateway): its chat call as sent and the reply it got. Absent for built-in turns. */
  agentCall?: AgentCall;
}

/** What the built-in loop adds to a turn: the observation shown, the parse, and what each action did. */
export interface LoopTurn {
  /** The observation shown at the start of the turn. */
  observation: string;
  /** Its images (a visual env's), as the env returned them; absent for text envs. */
  images?: readonly RgbImage[];
  /** The user message of the turn as `full` mode shows it (single_turn's summary prompt is in `promptIds`). */
  userText: string;
  /** The reasoning and answer parsed from the response ('' when unparsable). */
  think: string;
  answer: string;
  /** The parsed actions (at most maxActionsPerTurn) and what each did. */
  actions: TurnStep['actions'];
  /** Parsed actions beyond the per-turn limit (dropped). */
  droppedActions: number;
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

/** One episode: the core every producer fills, and the built-in loop's details when it made it. */
export interface Episode {
  index: number;
  tag: string;
  group: number;
  member: number;
  seed: number;
  turns: EpisodeTurn[];
  success: boolean;
  /** Sum of the turns' rewards (RAGEN's episodic_return). */
  envReturn: number;
  /** envReturn + penalties: what the trainer's reward is. */
  score: number;
  /** Env actions executed (the built-in loop), or chat calls made (an agent program). */
  numActions: number;
  endReason: EndReason;
  /** The built-in loop's episode: its system message and context. Absent for an agent program's episodes. */
  loop?: LoopEpisode;
}

/** What the built-in loop adds to an episode. */
export interface LoopEpisode {
  /** The system message (the env's instruction, legend, actions and action cap). */
  system: string;
  /**
   * Whole turns dropped from the context to fit `maxContextTokens`; a `context_full` end counts the turn it could not
   * prompt.
   */
  contextTruncations: number;
  /** The observation after the last step. */
  finalObservation: string;
}
