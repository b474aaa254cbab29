// The length of each env tag's first prompt, rendered exactly as the rollout loop renders turn 1, so a
// run can refuse a context budget that no episode could fit before any step runs.
import type { Tokenizer } from '../tokenizer/index.js';
import type { AgentConfig } from './config.js';
import { EnvGroups, type EnvGroupsOptions } from './env-groups.js';
import { EpisodeContext } from './episode-context.js';
import { slotSystemPrompt } from './rollout.js';

/** One tag's turn-1 prompt: its token count and what the loop needs to prompt it (+ `maxNewTokens`). */
export interface FirstPrompt {
  tag: string;
  seed: number;
  promptTokens: number;
  /** promptTokens + maxNewTokens: the smallest `maxContextTokens` under which turn 1 is prompted. */
  needed: number;
}

/**
 * Reset one env per tag of `options` with the batch's first seed and render its turn-1 prompt with
 * the agent's own context code (system message, template, prefill), without the context budget.
 */
export async function firstPrompts(
  options: EnvGroupsOptions,
  tokenizer: Tokenizer,
  cfg: AgentConfig,
): Promise<FirstPrompt[]> {
  // The tags' wrappers apply (observation truncation shapes the prompt), except the recorder: this probe is no episode.
  const tags = options.tags.map(({ wrappers, ...t }) => {
    const { recordEpisodes: _, ...kept } = wrappers ?? {};
    return { ...t, nGroups: 1, ...(wrappers ? { wrappers: kept } : {}) };
  });
  const groups = new EnvGroups({ ...options, tags, groupSize: 1 });
  try {
    const observations = await groups.reset(options.seed);
    const unbounded: AgentConfig = { ...cfg, maxContextTokens: Number.MAX_SAFE_INTEGER };
    return groups.slots.map((slot, i) => {
      const ctx = new EpisodeContext(tokenizer, unbounded, slotSystemPrompt(slot, cfg));
      const ids = ctx.prompt({
        turn: 1,
        state: observations[i]!,
        actionsLeft: groups.actionsLeft(slot),
        previousReward: undefined,
        invalidWarning: false,
      })!;
      return { tag: slot.tag, seed: slot.seed, promptTokens: ids.length, needed: ids.length + cfg.maxNewTokens };
    });
  } finally {
    await groups.close();
  }
}
