// The messages of config errors: unknown keys (with did-you-mean over every valid key, and RAGEN's names),
// bad values (zod issues rewritten as "key = value (source): reason"), and cross-field rules.
import type { z } from 'zod';
import { nearest, didYouMean } from '../util/index.js';
import { ConfigSchema, type RagenConfig } from './schema.js';
import { CONFIG_ALIASES } from './aliases.js';
import { needsCritic } from '../algo/index.js';
import { isPlainObject, leafPaths } from './overrides.js';
import { ragenKeyHint } from './ragen-keys.js';
import { allKeys, childSchema, kindOf, objectKeys } from './schema-walk.js';
import { entryErrors, tagEntries } from './env-entries.js';

// Every valid dotted key, shorthands included (they are valid to type).
const ALL_KEYS = [...allKeys(ConfigSchema), ...CONFIG_ALIASES.map((a) => a.key)];

/** How a value is shown in a message: JSON, so strings are quoted and lists read as lists. */
export function showValue(v: unknown): string {
  if (v === undefined) return '(missing)';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** The best guess at the key someone meant by `key` (dotted, array indices as numbers). */
export function suggestKey(key: string): string | undefined {
  const generic = key.replace(/\.\d+(?=\.|$)/g, '.N');
  const indices = [...key.matchAll(/\.(\d+)(?=\.|$)/g)].map((m) => m[1]!);
  const restore = (k: string): string => {
    let i = 0;
    return k.replace(/\.N(?=\.|$)/g, () => `.${indices[i++] ?? '0'}`);
  };
  const whole = nearest(generic, ALL_KEYS);
  if (whole !== undefined) return restore(whole);
  // The same leaf name in another section (`trainer.gamma` -> `algo.gamma`); only exact, since a near leaf
  // elsewhere (`model.dtype` ~ `algo.kl.controller.type`) misleads more than the list of the section's keys.
  const leaf = generic.split('.').pop()!;
  const match = ALL_KEYS.find((k) => k.split('.').pop() === leaf);
  return match === undefined ? undefined : restore(match);
}

/** The message for one unknown key. `parent` is the deepest valid section above it. */
export function unknownKeyMessage(key: string, value: unknown, source: string, parent: string): string {
  const head = `Unknown config key \`${key}\` = ${showValue(value)} (${source})`;
  const ragen = ragenKeyHint(key);
  if (ragen) {
    return ragen.ours === null
      ? `${head}: that is RAGEN's key, with no equivalent here (${ragen.note ?? 'see docs/config.md'}).`
      : `${head}: that is RAGEN's name; here it is \`${ragen.ours}\`${ragen.note ? ` (${ragen.note})` : ''}.`;
  }
  const guess = suggestKey(key);
  if (guess !== undefined) return `${head}. Did you mean \`${guess}\`?`;
  let section: z.ZodType = ConfigSchema;
  for (const seg of parent ? parent.split('.') : []) section = childSchema(section, seg) ?? section;
  const valid = objectKeys(section).join(', ');
  return `${head}. Valid keys ${parent ? `in \`${parent}\`` : 'at the top level'}: ${valid}.`;
}

/**
 * Unknown keys in one layer of plain config data (a preset file or a saved config), as messages.
 * Walks objects and arrays of objects; records (env.config) and leaves end the walk.
 */
export function findUnknownKeys(
  data: unknown,
  source: string,
  schema: z.ZodType = ConfigSchema,
  prefix: string[] = [],
): string[] {
  const out: string[] = [];
  const kind = kindOf(schema);
  if (kind === 'object' && isPlainObject(data)) {
    for (const [k, v] of Object.entries(data)) {
      const child = childSchema(schema, k);
      if (child === undefined) {
        const leaf = leafPaths(v, [...prefix, k])[0]!;
        const leafValue = leaf.slice(prefix.length + 1).reduce<unknown>((o, s) => (o as Record<string, unknown>)[s], v);
        out.push(unknownKeyMessage(leaf.join('.'), leafValue, source, prefix.join('.')));
      } else out.push(...findUnknownKeys(v, source, child, [...prefix, k]));
    }
  } else if (kind === 'array' && Array.isArray(data)) {
    data.forEach((item, i) =>
      out.push(...findUnknownKeys(item, source, childSchema(schema, String(i))!, [...prefix, String(i)])),
    );
  }
  return out;
}

/** The unknown-key message for an override's key path, or undefined when the path is valid. */
export function checkOverridePath(path: readonly string[], value: unknown, source: string): string | undefined {
  let schema: z.ZodType = ConfigSchema;
  for (let i = 0; i < path.length; i++) {
    if (kindOf(schema) === 'record') return undefined; // free-form maps (env.config) are checked by their owner
    const child = childSchema(schema, path[i]!);
    if (child === undefined) return unknownKeyMessage(path.join('.'), value, source, path.slice(0, i).join('.'));
    schema = child;
  }
  return findUnknownKeys(value, source, schema, [...path])[0];
}

/** A zod issue as "Bad config value `key` = value (source): reason." */
export function issueMessage(issue: z.core.$ZodIssue, value: unknown, source: string): string {
  const key = issue.path.map(String).join('.');
  const i = issue as any;
  let reason: string;
  switch (issue.code) {
    case 'invalid_type':
      if (value === undefined)
        return `Missing config value \`${key}\` (${source}): required, expected ${article(i.expected)}.`;
      reason = `expected ${article(i.expected)}, got ${article(typeName(value))}`;
      break;
    case 'too_small':
      reason =
        i.origin === 'array'
          ? `needs at least ${i.minimum} item(s)`
          : i.origin === 'string'
            ? 'must not be empty'
            : `must be ${i.inclusive ? '>=' : '>'} ${i.minimum}`;
      break;
    case 'too_big':
      reason =
        i.origin === 'array'
          ? `takes at most ${i.maximum} item(s)`
          : `must be ${i.inclusive ? '<=' : '<'} ${i.maximum}`;
      break;
    case 'invalid_value': {
      const options = (i.values as unknown[]).map(String);
      reason = `expected one of ${options.join(', ')}.${typeof value === 'string' ? didYouMean(value, options) : ''}`;
      break;
    }
    case 'invalid_format':
      reason = `must be ${issue.message}`;
      break;
    default:
      reason = issue.message.replace(/^Invalid input: /, '');
  }
  return `Bad config value \`${key}\` = ${showValue(value)} (${source}): ${reason}${/[.?]$/.test(reason) ? '' : '.'}`;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'object';
  if (typeof v === 'number' && !Number.isInteger(v)) return 'non-integer number';
  return typeof v;
}

function article(t: string): string {
  const names: Record<string, string> = {
    int: 'integer',
    object: 'object',
    array: 'list',
    tuple: 'list',
    record: 'map',
  };
  const n = names[t] ?? t;
  return n === 'null' ? 'null' : `${/^[aeiou]/.test(n) ? 'an' : 'a'} ${n}`;
}

/** Rules that involve more than one key; each message names every key involved. */
export function crossFieldErrors(c: RagenConfig): string[] {
  const out: string[] = [];
  if (c.trainer.microBatchSize > c.trainer.miniBatchSize) {
    out.push(
      `Bad config: \`trainer.microBatchSize\` = ${c.trainer.microBatchSize} is larger than \`trainer.miniBatchSize\` = ${c.trainer.miniBatchSize}; a micro-batch is a slice of a mini-batch.`,
    );
  }
  const f = c.algo.filter;
  if ((f.strategy === 'top_p' || f.strategy === 'top_k' || f.strategy === 'min_p') && f.value > 1) {
    out.push(
      `Bad config: \`algo.filter.value\` = ${f.value} must be <= 1 with \`algo.filter.strategy\` = "${f.strategy}" (a fraction).`,
    );
  }
  if (f.strategy === 'top_k_abs' && (!Number.isInteger(f.value) || f.value < 1)) {
    out.push(
      `Bad config: \`algo.filter.value\` = ${f.value} must be a whole number >= 1 with \`algo.filter.strategy\` = "top_k_abs" (a count of groups).`,
    );
  }
  if (c.algo.kl.controller.type === 'adaptive' && !c.algo.kl.inReward) {
    out.push(
      'Bad config: `algo.kl.controller.type` = "adaptive" needs `algo.kl.inReward` = true; the controller only adapts the in-reward penalty.',
    );
  }
  if ((c.algo.kl.useKlLoss || c.algo.kl.inReward) && c.model.reference === 'never') {
    out.push(
      'Bad config: a KL term is on (`algo.kl.useKlLoss` or `algo.kl.inReward`) but `model.reference` = "never"; KL needs the reference model.',
    );
  }
  if (c.trainer.criticWarmup > 0 && !needsCritic(c.algo.advEstimator)) {
    out.push(
      `Bad config: \`trainer.criticWarmup\` = ${c.trainer.criticWarmup} but \`algo.advEstimator\` = "${c.algo.advEstimator}" has no critic.`,
    );
  }
  const episodes = c.env.train.reduce((n, e) => n + e.groups * e.groupSize, 0);
  if (c.agent.contextWindowMode === 'full' && episodes < c.trainer.miniBatchSize) {
    out.push(
      `Bad config: \`trainer.miniBatchSize\` = ${c.trainer.miniBatchSize} is more than the ${episodes} episodes a step rolls out (Σ \`env.train.N.groups\` × \`groupSize\`); lower it or add groups.`,
    );
  }
  for (const split of ['train', 'val'] as const) {
    const entries = c.env[split];
    const odd = entries.findIndex((e) => e.groupSize !== entries[0]!.groupSize);
    if (odd > 0) {
      out.push(
        `Bad config: \`env.${split}.${odd}.groupSize\` = ${entries[odd]!.groupSize} differs from \`env.${split}.0.groupSize\` = ${entries[0]!.groupSize}; all groups of a ${split === 'train' ? 'step' : 'validation'} have one size (as RAGEN's es_manager).`,
      );
    }
  }
  out.push(...entryErrors(c));
  const trainTags = tagEntries(c, 'train').map((e) => e.tag);
  const dup = trainTags.find((t, i) => trainTags.indexOf(t) !== i);
  if (dup !== undefined)
    out.push(`Bad config: \`env.train\` lists \`${dup}\` twice; give it one entry with more groups.`);
  return out;
}
