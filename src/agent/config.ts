// The agent loop's settings (RAGEN's `agent_proxy` + `es_manager.format_penalty`), one zod schema
// so the trainer's config can embed it and `ragen eval` can fill it from flags.
import { z } from 'zod';
import { ConfigError, didYouMean } from '../util/index.js';

/** Which context each turn's generation sees, and how training samples are cut. */
export const CONTEXT_WINDOW_MODES = ['full', 'limited_multi_turn', 'single_turn'] as const;
export type ContextWindowMode = (typeof CONTEXT_WINDOW_MODES)[number];

export const agentConfigSchema = z
  .object({
    /** Most turns (generate -> step rounds) per episode (RAGEN `max_turn`). @default 5 */
    maxTurns: z.number().int().positive().default(5),
    /** Most actions executed per turn; extra parsed actions are dropped and counted (`max_actions_per_turn`). @default 2 */
    maxActionsPerTurn: z.number().int().positive().default(2),
    /** Separator between actions inside `<answer>` (`action_sep`). @default '||' */
    actionSep: z.string().min(1).default('||'),
    /** Ask for `<think>...</think>` before `<answer>`; `<think>` (or `<answer>`) is prefilled in the prompt. @default true */
    enableThink: z.boolean().default(true),
    /** Reward added for a turn whose response does not parse or holds no valid action (`format_penalty`). @default -0.1 */
    formatPenalty: z.number().finite().default(-0.1),
    /**
     * `full`: every turn sees the whole episode, one training sample per episode (loss on every turn);
     * `limited_multi_turn`: each turn sees the last `maxContextWindow` turns as chat turns, one sample per turn;
     * `single_turn`: each turn is a fresh [system, user] chat whose user message summarises the last
     * `maxContextWindow - 1` turns, one sample per turn. @default 'full'
     */
    contextWindowMode: z.enum(CONTEXT_WINDOW_MODES).default('full'),
    /**
     * Turns kept in view (the current one included) in `limited_multi_turn` and `single_turn`; -1 = all
     * (`max_context_window`). Refused with `full`, which keeps every turn (RAGEN ignored it there silently). @default -1
     */
    maxContextWindow: z.number().int().default(-1),
    /**
     * Most tokens of prompt + response (RAGEN `max_model_len`): the oldest whole turns are dropped from
     * the context until prompt + `maxNewTokens` fits; each drop is counted (`context_truncations`). @default 3600
     */
    maxContextTokens: z.number().int().positive().default(3600),
    /** Most tokens sampled per turn (RAGEN `response_length`); also stated in the prompt. @default 400 */
    maxNewTokens: z.number().int().positive().default(400),
    /** Stop sampling at `</answer>` (the template's closing tokens are then appended unsampled). @default true */
    stopAtAnswer: z.boolean().default(true),
    /** Put each turn's reward on that turn's last sampled token instead of the episode's return on the last one (`use_turn_scores`). @default false */
    useTurnScores: z.boolean().default(false),
    /** First words of the system prompt, before the env's instruction. @default "You're a helpful assistant." */
    systemPrefix: z.string().default("You're a helpful assistant."),
  })
  .strict();

/** The agent loop's settings, defaults filled. */
export type AgentConfig = z.infer<typeof agentConfigSchema>;

/** Fill defaults and validate; an unknown key or a bad value is a ConfigError naming it. */
export function agentConfig(overrides: Partial<AgentConfig> = {}): AgentConfig {
  const known = Object.keys(agentConfigSchema.shape);
  for (const key of Object.keys(overrides)) {
    if (!known.includes(key)) throw new ConfigError(`Unknown agent setting \`${key}\`.${didYouMean(key, known)} Valid keys: ${known.join(', ')}.`);
  }
  const result = agentConfigSchema.safeParse(overrides);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = issue.path.join('.');
    throw new ConfigError(`Bad agent setting \`${key}\` = ${JSON.stringify((overrides as Record<string, unknown>)[key])}: ${issue.message}.`);
  }
  const cfg = result.data;
  if (cfg.maxContextWindow !== -1 && cfg.maxContextWindow < 1) {
    throw new ConfigError(`Bad agent setting \`maxContextWindow\` = ${cfg.maxContextWindow}: give a number of turns >= 1, or -1 for all.`);
  }
  if (cfg.maxContextWindow !== -1 && cfg.contextWindowMode === 'full') {
    throw new ConfigError(
      `\`maxContextWindow\` = ${cfg.maxContextWindow} needs \`contextWindowMode\` = "limited_multi_turn" or "single_turn"; "full" always keeps every turn ` +
        '(bound its length with `maxContextTokens`). Remove `maxContextWindow` (or set it to -1), or change the mode.',
    );
  }
  return cfg;
}
