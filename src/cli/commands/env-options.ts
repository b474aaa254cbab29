// Option parsing shared by the env commands (play, solve, bench envs): seeds, key=value configs, action lists.
import type { Command } from 'commander';
import { UsageError } from '../../util/index.js';

/** A seed from the command line: a safe integer, else a UsageError naming the value. */
export function parseSeed(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n))
    throw new UsageError(`Bad seed \`${text}\`: give an integer, e.g. --seed 3.`);
  return n;
}

/** A positive integer option value (e.g. --max-actions). */
export function parsePositiveInt(name: string): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`Bad ${name} \`${text}\`: give an integer >= 1.`);
    return n;
  };
}

/** A positive number option value (e.g. --seconds). */
export function parsePositive(name: string): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`Bad ${name} \`${text}\`: give a number > 0.`);
    return n;
  };
}

/**
 * `key=value` pairs into an object. Values parse as JSON when they can (`3`, `true`, `[1,2]`,
 * `"text"`), else stay strings (`dataPath=/tmp/q.jsonl`).
 */
export function parseConfigPairs(pairs: readonly string[] = []): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`Bad --config \`${pair}\`: write key=value, e.g. --config size=8.`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // not JSON: keep the text as a string
    }
    config[pair.slice(0, eq)] = value;
  }
  return config;
}

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
