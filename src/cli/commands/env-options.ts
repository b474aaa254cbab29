// Options of the single-episode env commands (play, solve): action lists, --mode, and the options they share.
// The value parsers they use (seeds, numbers, key=value pairs) are src/util/option-values.ts.
import type { Command } from 'commander';
import { parseSeed, UsageError } from '../../util/index.js';

/** An action list as the agent writes it: `Up || Left || Up` (empty entries dropped). */
export function parseActions(text: string): string[] {
  return text
    .split('||')
    .map((a) => a.trim())
    .filter((a) => a !== '');
}

/** `--mode` values. */
export function parseMode(text: string): 'train' | 'val' {
  if (text !== 'train' && text !== 'val') throw new UsageError(`Bad mode \`${text}\`: give train or val.`);
  return text;
}

/** The options every single-episode command takes: `--seed`, `--mode`, `--config key=value...`. */
export function addEpisodeOptions(command: Command): Command {
  return command
    .option('--seed <n>', 'seed of the episode', parseSeed, 0)
    .option('--mode <mode>', 'train or val (envs may use different data splits)', parseMode, 'train')
    .option('--config <key=value...>', 'env config overrides; values parse as JSON when they can');
}
