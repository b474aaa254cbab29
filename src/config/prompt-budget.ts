// The context budget against the prompts it must hold and the model that must hold it: a `maxContextTokens` below an
// env's first prompt (+ `maxNewTokens`, the loop's own rule) would end every episode `context_full` with zero turns,
// and one past the model's position table would run the model where it has no positions.
import { firstPrompts, type AgentConfig, type EnvGroupsOptions } from '../agent/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { ConfigError } from '../util/index.js';
import { envGroupsOptions } from './rollout-options.js';
import { tagEntries } from './env-entries.js';
import type { RagenConfig } from './schema.js';

/** A set of env tags to check, named as the user configured it (`env.train`, `--env`). */
export interface PromptSet {
  label: string;
  options: EnvGroupsOptions;
}

/**
 * Render the turn-1 prompt of every `env.train` and `env.val` tag (first seed of each split) with the run's tokenizer
 * and check it against the budget and the model's positions (see `checkPromptsFit`).
 */
export async function checkPromptBudget(
  config: RagenConfig,
  tokenizer: Tokenizer,
  maxPositions = Infinity,
): Promise<void> {
  // agent programs render their own prompts (the gateway checks each call against the model's context)
  const sets = (['train', 'val'] as const)
    .filter((split) => tagEntries(config, split).length > 0)
    .map((split) => ({ label: `env.${split}`, options: envGroupsOptions(config, split) }));
  await checkPromptsFit(sets, tokenizer, config.agent, maxPositions);
}

/**
 * Throw one ConfigError when `agent.maxContextTokens` is past the model's `maxPositions`, or naming each tag whose
 * first
 * prompt + `agent.maxNewTokens` exceeds the budget, with the smallest budget that fits, or, where even that is past the
 * model's positions, what can shrink instead. `ragen train` and `ragen eval` both run it, so they refuse the same
 * things.
 */
export async function checkPromptsFit(
  sets: PromptSet[],
  tokenizer: Tokenizer,
  agent: AgentConfig,
  maxPositions = Infinity,
): Promise<void> {
  const { maxContextTokens, maxNewTokens } = agent;
  if (maxContextTokens > maxPositions) {
    throw new ConfigError(
      `\`agent.maxContextTokens\` = ${maxContextTokens} is past the model's ${maxPositions} positions (its max_position_embeddings), where a prompt plus its generation must fit. Lower \`agent.maxContextTokens\` to at most ${maxPositions}, or use a model with a longer context.`,
    );
  }
  const problems: string[] = [];
  let least = 0;
  for (const { label, options } of sets) {
    for (const p of await firstPrompts(options, tokenizer, agent)) {
      if (p.needed <= maxContextTokens) continue;
      least = Math.max(least, p.needed);
      problems.push(
        `\`${label}\` tag \`${p.tag}\`: the first prompt (seed ${p.seed}) is ${p.promptTokens} tokens, + \`agent.maxNewTokens\` = ${maxNewTokens} makes ${p.needed}, over \`agent.maxContextTokens\` = ${maxContextTokens}, so every episode would end \`context_full\` with zero turns.`,
      );
    }
  }
  if (problems.length === 0) return;
  const fix =
    least <= maxPositions
      ? `Raise \`agent.maxContextTokens\` to at least ${least} (or lower \`agent.maxNewTokens\`).`
      : `The model holds ${maxPositions} positions, so a larger \`agent.maxContextTokens\` cannot help: shorten the first prompt (the env's instruction or observation; for MCP, fewer tools with \`allowedTools\`), lower \`agent.maxNewTokens\`, or use a model with a longer context.`;
  throw new ConfigError(`${problems.join('\n')}\n${fix}`);
}
