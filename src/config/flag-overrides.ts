// A command-line flag that is shorthand for a config key (`--steps` for `trainer.steps`) against the `key=value`
// overrides given with it: both are checked, and a disagreement is refused by name rather than settled by order.
import { ConfigError } from '../util/index.js';
import { findAlias } from './aliases.js';
import { resolveConfig } from './load.js';
import { parseOverride } from './overrides.js';

/** A flag the user gave, and the config key it sets. */
export interface FlagSetting {
  /** As typed, e.g. `--steps`. */
  flag: string;
  /** The dotted config key, e.g. `trainer.steps`. */
  key: string;
  /** The value the flag sets; absent when the flag sets the key per run (`--runs-dir` -> `logging.runDir`). */
  value?: unknown;
}

/**
 * Refuse overrides that set a flag's key to another value, naming both (docs/config.md: "A flag and an override").
 * An override that sets it to the same value is accepted. A conflicting override is also validated on its own, so a bad
 * value (`trainer.steps=abc`) is named with its reason. Overrides that do not parse are left to the config loader.
 */
export function checkFlagOverrides(flags: readonly FlagSetting[], overrides: readonly string[]): void {
  const problems: string[] = [];
  for (const text of overrides) {
    let sets: { key: string; value: unknown }[];
    try {
      const o = parseOverride(text);
      const alias = findAlias(o.path.join('.'));
      sets = alias
        ? Object.entries(alias.expand(o.value)).map(([key, value]) => ({ key, value }))
        : [{ key: o.path.join('.'), value: o.value }];
    } catch {
      continue; // the loader reports a malformed override with its own sentence
    }
    for (const { key, value } of sets) {
      const flag = flags.find((f) => f.key === key);
      if (!flag) continue;
      if (!('value' in flag)) {
        problems.push(
          `\`${key}\` is set by \`${flag.flag}\` (one value per run); drop the override \`${text}\` and give \`${flag.flag}\` instead.`,
        );
        continue;
      }
      if (sameValue(flag.value, value)) continue;
      let invalid = '';
      try {
        resolveConfig([], [text]);
      } catch (err) {
        if (err instanceof ConfigError && err.message.includes(key))
          invalid = ` The override is also invalid: ${err.message}`;
      }
      problems.push(
        `\`${flag.flag} ${String(flag.value)}\` and the override \`${text}\` both set \`${key}\`, to different values; give one of them (or the same value in both).${invalid}`,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems.join('\n'));
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
