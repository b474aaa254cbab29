// Hydra-style command-line overrides (`algo.filter.topP=0.9`, `env.train=[{tag: Bandit}]`) and plain-object merging.
// Values are parsed as YAML scalars or flow collections, so numbers, booleans, null and lists need no quoting.
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../util/index.js';

/** One parsed override: the key split on dots, the parsed value, and the text the user wrote. */
export interface Override {
  path: string[];
  value: unknown;
  text: string;
}

/** A plain `{}` object (not an array, not null, not a class instance). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/**
 * Parse `key=value`. The key is dotted (`algo.filter.topP`; array items by index: `env.train.0.groups`);
 * a leading `+` (Hydra's "add") is accepted and ignored. The value is YAML: `0.9`, `true`, `null`,
 * `[a, b]`, `{tag: Bandit}`; an empty value is the empty string.
 */
export function parseOverride(text: string): Override {
  const eq = text.indexOf('=');
  const rawKey = (eq < 0 ? text : text.slice(0, eq)).trim().replace(/^\+/, '');
  if (eq < 0 || !/^[\w-]+(\.[\w-]+)*$/.test(rawKey)) {
    throw new ConfigError(
      `Bad override \`${text}\`: expected \`dotted.key=value\`, e.g. \`trainer.steps=100\` or \`algo.filter.topP=0.9\`.`,
    );
  }
  const raw = text.slice(eq + 1).trim();
  let value: unknown = '';
  if (raw !== '') {
    try {
      value = parseYaml(raw);
    } catch (err) {
      throw new ConfigError(
        `Bad override \`${text}\`: the value \`${raw}\` is not valid YAML (${(err as Error).message.split('\n')[0]}). Quote strings with special characters: \`${rawKey}='...'\`.`,
      );
    }
  }
  const bad = nonPlainData(value);
  if (bad) throw new ConfigError(`Bad override \`${text}\`: ${bad}.`);
  return { path: rawKey.split('.'), value, text };
}

/**
 * What makes parsed YAML unfit as config data, as a sentence, or null: a number that is not finite (YAML reads `1e400`
 * and `.inf` as Infinity, `.nan` as NaN) or an anchor holding an alias to itself (a cycle, which no config can mean).
 */
export function nonPlainData(value: unknown, path: string[] = [], seen: unknown[] = []): string | null {
  const where = path.length > 0 ? `\`${path.join('.')}\`` : 'the value';
  if (typeof value === 'number' && !Number.isFinite(value))
    return `${where} reads as ${value}; config numbers must be finite`;
  if (typeof value !== 'object' || value === null) return null;
  if (seen.includes(value)) return `${where} is an alias inside its own YAML anchor; config data must be a plain tree`;
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [k, v] of entries) {
    const bad = nonPlainData(v, [...path, k], [...seen, value]);
    if (bad) return bad;
  }
  return null;
}

/** Merge `over` into a deep copy of `base`: objects merge key by key, anything else (arrays included) replaces. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (isPlainObject(base) && isPlainObject(over)) {
    const out: Record<string, unknown> = { ...base };
    for (const [k, v] of Object.entries(over)) out[k] = k in base ? deepMerge(base[k], v) : clone(v);
    return out;
  }
  return clone(over);
}

/** Deep copy of plain data (objects, arrays, scalars). */
export function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map(clone) as T;
  if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clone(x)])) as T;
  return v;
}

/**
 * Set `path` in `target` (mutating it). Missing objects on the way are created; an array index may name
 * an existing item or the next one (appending). Errors name the override.
 */
export function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown, text: string): void {
  let node: unknown = target;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    const last = i === path.length - 1;
    if (Array.isArray(node)) {
      const idx = /^\d+$/.test(seg) ? Number(seg) : NaN;
      if (!(idx <= node.length)) {
        throw new ConfigError(
          `Bad override \`${text}\`: \`${path.slice(0, i).join('.')}\` is a list of ${node.length} item(s); use an index from 0 to ${node.length} (${node.length} appends).`,
        );
      }
      if (last) node[idx] = clone(value);
      else {
        if (!isPlainObject(node[idx]) && !Array.isArray(node[idx])) node[idx] = {};
        node = node[idx];
      }
    } else if (isPlainObject(node)) {
      if (last) node[seg] = clone(value);
      else {
        if (!isPlainObject(node[seg]) && !Array.isArray(node[seg])) node[seg] = {};
        node = node[seg];
      }
    } else {
      throw new ConfigError(`Bad override \`${text}\`: \`${path.slice(0, i).join('.')}\` is a value, not a section.`);
    }
  }
}

/** The value at `path` in plain data, or undefined. */
export function getPath(data: unknown, path: readonly (string | number)[]): unknown {
  let node = data;
  for (const seg of path) {
    if (Array.isArray(node)) node = node[Number(seg)];
    else if (isPlainObject(node)) node = node[String(seg)];
    else return undefined;
  }
  return node;
}

/** Every leaf path of plain data (objects are walked; arrays and scalars are leaves). Empty objects are leaves. */
export function leafPaths(data: unknown, prefix: string[] = []): string[][] {
  if (!isPlainObject(data) || Object.keys(data).length === 0) return [prefix];
  return Object.entries(data).flatMap(([k, v]) => leafPaths(v, [...prefix, k]));
}
