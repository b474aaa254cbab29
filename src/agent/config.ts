// The agent loop's settings (RAGEN's `agent_proxy`, `es_manager.format_penalty` and the rollout's token budgets):
// one zod schema, which is also the `agent` section of the run config (src/config), so the loop reads that section as
// is.
import { z } from 'zod';
import { httpServerSchema, mcpAgentEnv, stdioServerSchema } from '../env/index.js';
import { ConfigError, didYouMean } from '../util/index.js';

/** Which context each turn's generation sees, and how training samples are cut. */
export const CONTEXT_WINDOW_MODES = ['full', 'limited_multi_turn', 'single_turn'] as const;
export type ContextWindowMode = (typeof CONTEXT_WINDOW_MODES)[number];

/**
 * How the agent talks to the environment: turns, action caps, context, token budgets, reward placement (RAGEN's
 * `agent_proxy`).
 */
export const agentConfigSchema = z
  .strictObject({
    /** Most model turns (generate -> step rounds) per episode (RAGEN's `max_turn`). @default 5 */
    maxTurns: z.number().int().min(1).default(5),
    /**
     * Actions executed per turn; extra actions in one answer are dropped without penalty and counted (RAGEN's
     * `max_actions_per_turn`). @default 2
     */
    maxActionsPerTurn: z.number().int().min(1).default(2),
    /**
     * Actions per episode before it is cut off (RAGEN's per-tag `max_actions_per_traj`); null uses each env's own cap.
     * @default null
     */
    maxActionsPerEpisode: z.number().int().min(1).nullable().default(null),
    /** Separator of actions inside `<answer>` (RAGEN's `action_sep`). @default "||" */
    actionSep: z.string().min(1).default('||'),
    /**
     * Ask for `<think>...</think>` before `<answer>`; `<think>` (or `<answer>`) is prefilled in the prompt (RAGEN's
     * `enable_think`). @default true
     */
    enableThink: z.boolean().default(true),
    /**
     * Reward added once per turn whose answer does not parse or holds no valid action (RAGEN's `format_penalty`).
     * @default -0.1
     */
    formatPenalty: z.number().max(0).default(-0.1),
    /**
     * Reward added per executed action, every turn (RAGEN's `step_penalty`, which is positive and subtracted: its 0.05
     * is -0.05 here). @default 0
     */
    stepPenalty: z.number().max(0).default(0),
    /**
     * Reward added × (length − limit) / limit to a turn whose parsed `<think>` text is longer than `thinkLenLimit`
     * characters (RAGEN's `think_len_penalty`, positive and subtracted there). @default 0
     */
    thinkLenPenalty: z.number().max(0).default(0),
    /** The `<think>` length in characters past which `thinkLenPenalty` applies; null: none (RAGEN's -1). @default null */
    thinkLenLimit: z.number().int().min(1).nullable().default(null),
    /**
     * `full`: every turn sees the whole episode, one training sequence per episode holding every turn;
     * `limited_multi_turn`: each turn sees the last `maxContextWindow` turns as chat, one sequence per turn;
     * `single_turn`: each turn is a fresh [system, user] chat whose user message summarises the last `maxContextWindow`
     * − 1 turns, one sequence per turn (RAGEN's `context_window_mode`). @default "full"
     */
    contextWindowMode: z.enum(CONTEXT_WINDOW_MODES).default('full'),
    /**
     * Turns kept in view (the current one included) by `limited_multi_turn` and `single_turn`; null keeps all (RAGEN's
     * `max_context_window`, where -1 means all). Not allowed with `full`, which always keeps every turn (RAGEN ignores
     * it there). @default null
     */
    maxContextWindow: z.number().int().min(1).nullable().default(null),
    /**
     * `limited_multi_turn` only: turns that fall out of the `maxContextWindow` window are summarised by the policy
     * itself (one extra generation per slot when the window moves, up to `maxNewTokens` tokens, at the rollout's
     * sampling settings) and the summary opens the window's first user message, instead of the turns being dropped
     * without a trace. The summary's tokens are context, never trained (loss mask 0): no reward is credited to them
     * (RAGEN's `enable_summary_memory`, whose summary is a template, not policy-written). @default false
     */
    summaryMemory: z.boolean().default(false),
    /**
     * Longest prompt + response in tokens (RAGEN's `max_model_len`): the oldest whole turns are dropped from the
     * context until the prompt plus `maxNewTokens` fits; each drop is counted (`context_truncations`). `ragen train`
     * and `ragen eval` refuse a budget below an env's first prompt plus `maxNewTokens`, and one past the model's
     * positions (`max_position_embeddings`). @default 3600
     */
    maxContextTokens: z.number().int().min(16).default(3600),
    /** Most tokens sampled per turn (RAGEN's `response_length`); also stated in the prompt. @default 400 */
    maxNewTokens: z.number().int().min(1).default(400),
    /** Stop sampling at `</answer>` (the chat template's closing tokens are then appended unsampled). @default true */
    stopAtAnswer: z.boolean().default(true),
    /**
     * Put each turn's reward on that turn's last sampled token instead of the episode's summed reward on its last token
     * (RAGEN's `use_turn_scores`). @default false
     */
    useTurnScores: z.boolean().default(false),
    /** First words of the system prompt, before the env's instruction. @default "You're a helpful assistant." */
    systemPrefix: z.string().default("You're a helpful assistant."),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.summaryMemory && (cfg.contextWindowMode !== 'limited_multi_turn' || cfg.maxContextWindow === null)) {
      ctx.addIssue({
        code: 'custom',
        path: ['summaryMemory'],
        message: `summarises the turns that leave a \`limited_multi_turn\` window, so it needs \`contextWindowMode\` = "limited_multi_turn" and a \`maxContextWindow\` (got "${cfg.contextWindowMode}" and ${cfg.maxContextWindow}). Set both, or drop \`summaryMemory\``,
      });
    }
    if (cfg.maxContextWindow !== null && cfg.contextWindowMode === 'full') {
      ctx.addIssue({
        code: 'custom',
        path: ['maxContextWindow'],
        message: `needs \`contextWindowMode\` = "limited_multi_turn" or "single_turn"; "full" always keeps every turn (bound its length with \`maxContextTokens\`). Set it to null, or change the mode`,
      });
    }
  });

/** The agent loop's settings, defaults filled. */
export type AgentConfig = z.infer<typeof agentConfigSchema>;

/** Fill defaults and validate (for code and `--set` flags; a run's config validates its `agent` section itself). */
export function agentConfig(overrides: Partial<AgentConfig> = {}): AgentConfig {
  const known = Object.keys(agentConfigSchema.shape);
  for (const key of Object.keys(overrides)) {
    if (!known.includes(key))
      throw new ConfigError(
        `Unknown agent setting \`${key}\`.${didYouMean(key, known)} Valid keys: ${known.join(', ')}.`,
      );
  }
  const result = agentConfigSchema.safeParse(overrides);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = issue.path.join('.');
    throw new ConfigError(
      `Bad agent setting \`${key}\` = ${JSON.stringify((overrides as Record<string, unknown>)[key])}: ${issue.message}.`,
    );
  }
  return result.data;
}

/** An exported function of an ES module: `{module: "./verify.mjs", export: "default"}`. */
export const moduleExportSchema = z.strictObject({
  /**
   * Path of an ES module (.mjs/.js; .ts only where the trainer runs under tsx), relative to the agent's `cwd` when set,
   * else to the trainer's working directory.
   */
  module: z.string().min(1),
  /** Name of the exported function. @default "default" */
  export: z.string().min(1).default('default'),
});

/**
 * An agent program trained through the gateway (the `agent` block of an `env.train` entry: `{agent: {command: "node
 * my-agent.mjs", timeoutS: 60}, groups, groupSize}`): one run of `command` (or one call of an exported function,
 * `module`) per episode, see docs/agents.md.
 */
export const agentProgramSchema = z
  .strictObject({
    /**
     * Shell command run once per episode (`sh -c`), with OPENAI_BASE_URL, OPENAI_API_KEY and
     * RAGEN_SEED/RAGEN_GROUP/RAGEN_EPISODE/RAGEN_REWARD_URL set. Exactly one of `command` and `module`. @default null
     */
    command: z.string().min(1).nullable().default(null),
    /**
     * In-process agent: an ES module whose export (`export`) is an async function called once per episode with
     * `{baseUrl, apiKey, rewardUrl, seed, group, episodeId, signal}`; it returns the reward (a number or `{reward}`) or
     * reports it over HTTP. Path relative to `cwd` when set, else to the trainer's working directory; checked when the
     * run starts. Exactly one of `command` and `module`. @default null
     */
    module: z.string().min(1).nullable().default(null),
    /** The exported function of `module` to call. @default "default" */
    export: z.string().min(1).default('default'),
    /**
     * Seconds one episode may take; then the program and everything it started are killed (an in-process function gets
     * its `signal` aborted and is abandoned) and scored `failureReward`. @default 60
     */
    timeoutS: z.number().positive().default(60),
    /**
     * Reward of an episode whose program crashed (non-zero exit or a thrown error), timed out or reported no reward.
     * @default 0
     */
    failureReward: z.number().finite().default(0),
    /**
     * Added to an episode's score for each reply holding tool-call text that does not parse (the garbled call the
     * program could not run), as the built-in loop's `agent.formatPenalty` charges an unparsable action: without it a
     * garbled call scores the same as a clean miss, and a group that only fails gives the format nothing to learn
     * from. The turn's `penalty`; success and `env_return` keep the program's reward. 0: the program's reward only.
     * @default -0.1
     */
    formatPenalty: z.number().max(0).default(-0.1),
    /** Programs running at once. @default 4 */
    concurrency: z.number().int().min(1).default(4),
    /** Working directory of the program, and the base of relative `module` paths; null: the trainer's. @default null */
    cwd: z.string().min(1).nullable().default(null),
    /** Calls one episode may make; later ones are answered 429 (a program stuck in a loop). @default 256 */
    maxCalls: z.number().int().min(1).default(256),
    /**
     * Task verifier: `{module, export}` of a function `(task, transcript) => number | Promise<number>` (task `{seed,
     * group, episodeId}`, transcript the episode's calls `{messages, tools, completion}`) that computes the reward of
     * every episode whose program finished; a reward the program reported is then ignored (counted in
     * `info/reported_reward_ignored`). null: the program reports its reward. @default null
     */
    verifier: moduleExportSchema.nullable().default(null),
    /**
     * Variables added to a `command` program's environment (after the trainer's own, before OPENAI_BASE_URL and the
     * RAGEN_* task variables). @default {}
     */
    env: z.record(z.string(), z.string()).default({}),
    /**
     * An MCP tool server the `command` program uses (`{command, args, env, cwd}` for stdio, `{url, headers}` for
     * streamable HTTP, as `env.config.MCP.server`), given to it as RAGEN_MCP_URL/RAGEN_MCP_HEADERS or
     * RAGEN_MCP_COMMAND/RAGEN_MCP_ARGS/RAGEN_MCP_ENV/RAGEN_MCP_CWD (a stdio server is started by the program, in its
     * process group). null: none. @default null
     */
    mcp: z.union([stdioServerSchema, httpServerSchema]).nullable().default(null),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.module !== null && (cfg.mcp !== null || Object.keys(cfg.env).length > 0)) {
      ctx.addIssue({
        code: 'custom',
        path: [cfg.mcp !== null ? 'mcp' : 'env'],
        message:
          '`env` and `mcp` set the environment of a `command` program; an in-process `module` agent reads its own settings (drop them, or run it as a command)',
      });
    }
    if ((cfg.command === null) === (cfg.module === null)) {
      ctx.addIssue({
        code: 'custom',
        path: [cfg.command === null ? 'command' : 'module'],
        message:
          cfg.command === null
            ? 'an agent needs exactly one of `command` (a program, e.g. "node my-agent.mjs") or `module` (an in-process function, e.g. "./my-agent.mjs"); neither is set'
            : 'an agent takes exactly one of `command` and `module`, both are set; keep one',
      });
    }
  });

/** An agent program's settings, defaults filled. */
export type AgentProgramConfig = z.infer<typeof agentProgramSchema>;

/** The variables a `command` program gets from its block: `env`, then its MCP server's RAGEN_MCP_* (docs/agents.md). */
export function programEnv(config: AgentProgramConfig): Record<string, string> {
  return { ...config.env, ...(config.mcp ? mcpAgentEnv(config.mcp) : {}) };
}

/** Validate an `agent` block (defaults filled); a bad one is a ConfigError naming the key, the value and what fits. */
export function agentProgram(block: unknown, where = 'agent'): AgentProgramConfig {
  const result = agentProgramSchema.safeParse(block);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const key = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') {
    const known = Object.keys(key === 'verifier' ? moduleExportSchema.shape : agentProgramSchema.shape);
    const bad = issue.keys[0]!;
    throw new ConfigError(
      `Unknown key \`${where}.${key ? `${key}.` : ''}${bad}\`.${didYouMean(bad, known)} Valid keys: ${known.join(', ')}.`,
    );
  }
  if (issue.code === 'custom') throw new ConfigError(`\`${where}\`: ${issue.message}.`);
  const value = issue.path.reduce<unknown>(
    (v, k) => (typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[k as PropertyKey] : undefined),
    block,
  );
  throw new ConfigError(
    `Bad config value \`${where}${key ? `.${key}` : ''}\` = ${JSON.stringify(value) ?? 'undefined'}: ${issue.message}. Example: {command: "node my-agent.mjs", timeoutS: 60} or {module: "./my-agent.mjs", timeoutS: 60}.`,
  );
}
