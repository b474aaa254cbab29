// Which config keys an override may change when a run resumes (`ragen train --resume <run> key=value`). A resumed
// run rebuilds its models from the checkpoint and its rollouts from the saved settings, so only keys the trainer
// reads afresh at every step, validation or checkpoint may change; any other override would be recorded in the new
// checkpoints' config while the run went on without it, so it is refused by name.
import { ConfigError } from '../util/index.js';
import { findAlias } from './aliases.js';
import { parseOverride } from './overrides.js';

/** Key prefixes an override may set on resume (documented in docs/training.md). */
export const RESUMABLE_KEYS = [
  'trainer.',
  'logging.console',
  'logging.logEvery',
  'logging.rolloutsEvery',
  'logging.rolloutsPerStep',
  'logging.sinks',
  'logging.wandb.',
  'env.val',
  'generation.val.',
  'model.backend',
] as const;

/** Whether `key` (dotted) may change when a run resumes. */
export function resumable(key: string): boolean {
  return RESUMABLE_KEYS.some((p) => (p.endsWith('.') ? key.startsWith(p) : key === p || key.startsWith(`${p}.`)));
}

/** Throw a ConfigError naming every override that may not change on resume (shorthands checked by what they set). */
export function checkResumeOverrides(overrides: readonly string[]): void {
  const refused: string[] = [];
  for (const text of overrides) {
    const key = parseOverride(text).path.join('.');
    const alias = findAlias(key);
    const keys = alias ? Object.keys(alias.expand(null)) : [key];
    refused.push(...keys.filter((k) => !resumable(k)).map((k) => `\`${k}\` (from \`${text}\`)`));
  }
  if (refused.length === 0) return;
  throw new ConfigError(
    `These overrides cannot change when a run resumes: ${refused.join(', ')}. The checkpoint's models and rollouts were made ` +
      `with the saved values. On resume you may change: ${RESUMABLE_KEYS.map((k) => (k.endsWith('.') ? `${k}*` : k)).join(', ')}. ` +
      'To change anything else, start a new run from the checkpoint (`ragen train --config <run>/config.yaml model.path=<run>/checkpoints/step-N key=value ...`).',
  );
}
