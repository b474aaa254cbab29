// The context budget against the prompts it must hold: a `maxContextTokens` below an env's first prompt
// (+ `maxNewTokens`, the loop's own rule) would end every episode `context_full` with zero turns.
import { firstPrompts } from '../agent/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { ConfigError } from '../util/index.js';
import { envGroupsOptions } from './rollout-options.js';
import { tagEntries } from './env-entries.js';
import type { RagenConfig } from './schema.js';

/**
 * Render the turn-1 prompt of every `env.train` and `env.val` tag (first seed of each split) with the
 * run's tokenizer; throw one ConfigError naming each tag whose prompt + `agent.maxNewTokens` exceeds
 * `agent.maxContextTokens`, with the smallest budget that fits.
 */
export async function checkPromptBudget(config: RagenConfig, tokenizer: Tokenizer): Promise<void> {
  const { maxContextTokens, maxNewTokens } = config.agent;
  const problems: string[] = [];
  let least = 0;
  for (const split of ['train', 'val'] as const) {
    if (tagEntries(config, split).length === 0) continue; // agent programs render their own prompts (the gateway checks each call)
    for (const p of await firstPrompts(envGroupsOptions(config, split), tokenizer, config.agent)) {
      if (p.needed <= maxContextTokens) continue;
      least = Math.max(least, p.needed);
      problems.push(`\`env.${split}\` tag \`${p.tag}\`: the first prompt (seed ${p.seed}) is ${p.promptTokens} tokens, + \`agent.maxNewTokens\` = ${maxNewTokens} makes ${p.needed}, over \`agent.maxContextTokens\` = ${maxContextTokens}, so every episode would end \`context_full\` with zero turns.`);
    }
  }
  if (problems.length) throw new ConfigError(`${problems.join('\n')}\nRaise \`agent.maxContextTokens\` to at least ${least} (or lower \`agent.maxNewTokens\`).`);
}
