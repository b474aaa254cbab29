// Values of command-line options, checked where they are parsed: seeds, positive numbers, `key=value` pairs. Shared
// by the CLI, the evaluation runner and the lab; a bad value is a UsageError naming it and the fix.
import { UsageError } from './errors.js';

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
