// Loading the StarPO config: typed defaults <- preset YAML (with `extends`) <- `dotted.key=value` overrides,
// validated once into a frozen, complete object; saved as config.yaml in every run and checkpoint.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ConfigError, didYouMean, writeFileAt } from '../util/index.js';
import { ConfigSchema, type RagenConfig } from './schema.js';
import { expandAliases, findAlias } from './aliases.js';
import { checkOverridePath, crossFieldErrors, findUnknownKeys, issueMessage } from './errors.js';
import { migrateSavedConfig } from './migrate.js';
import { clone, deepMerge, getPath, isPlainObject, nonPlainData, parseOverride, setPath } from './overrides.js';

/** One source of config values: a preset file, a saved run config, or data built in code. */
export interface ConfigLayer {
  /** Named in error messages: a file path, or e.g. `defaults`. */
  source: string;
  data: Record<string, unknown>;
}

/** The preset `ragen train` uses without `--config`. */
export const DEFAULT_PRESET = 'sokoban-ppo';
/** File name of the resolved config in run and checkpoint directories. */
export const CONFIG_FILE = 'config.yaml';

/** The complete default config (every key at its schema default), frozen. */
export function defaultConfig(): RagenConfig {
  return deepFreeze(ConfigSchema.parse({}));
}

/**
 * Validate layers merged in order over the defaults, then apply overrides (`algo.filter.topP=0.9`).
 * Throws one ConfigError listing every problem, each naming the full key, the value, where it came
 * from, the reason and the nearest valid key.
 */
export function resolveConfig(rawLayers: readonly ConfigLayer[], overrides: readonly string[] = []): RagenConfig {
  const layers = rawLayers.map((l) => ({ source: l.source, data: expandAliases(l.data, l.source) }));
  const problems: string[] = [];
  const setters: { path: string[]; source: string }[] = [];
  let merged = clone(ConfigSchema.parse({})) as unknown as Record<string, unknown>;
  for (const layer of layers) {
    const unknown = findUnknownKeys(layer.data, layer.source);
    problems.push(...unknown);
    if (unknown.length === 0) merged = deepMerge(merged, layer.data) as Record<string, unknown>;
    setters.push({ path: [], source: layer.source });
  }
  for (const text of overrides) {
    const o = parseOverride(text);
    const source = `override \`${text}\``;
    const alias = findAlias(o.path.join('.'));
    const sets = alias
      ? Object.entries(alias.expand(o.value)).map(([k, v]) => ({ path: k.split('.'), value: v }))
      : [o];
    for (const { path, value } of sets) {
      const unknown = checkOverridePath(path, value, source);
      if (unknown !== undefined) problems.push(unknown);
      else {
        setPath(merged, path, value, text);
        setters.push({ path, source });
      }
    }
  }
  if (problems.length) throw new ConfigError(problems.join('\n'));

  const sourceOf = (path: string[]): string => {
    for (let i = setters.length - 1; i >= 0; i--) {
      const s = setters[i]!;
      if (s.path.length > 0 && s.path.every((seg, j) => j >= path.length || seg === path[j])) return s.source;
      if (s.path.length === 0) {
        const layer = layers.find((l) => l.source === s.source)!;
        if (setsPath(layer.data, path)) return s.source;
      }
    }
    return 'defaults';
  };
  const result = ConfigSchema.safeParse(merged);
  if (!result.success) {
    const messages = result.error.issues.map((issue) => {
      const path = issue.path.map(String);
      return issueMessage(issue, getPath(merged, path), sourceOf(path));
    });
    throw new ConfigError([...new Set(messages)].join('\n'));
  }
  const config = deepFreeze(result.data) as RagenConfig;
  const cross = crossFieldErrors(config);
  if (cross.length) throw new ConfigError(cross.join('\n'));
  return config;
}

// Does `data` set `path` or a prefix of it (a layer setting `env.train` sets `env.train.0.groups`)?
function setsPath(data: unknown, path: readonly string[]): boolean {
  let node = data;
  for (const seg of path) {
    if (isPlainObject(node)) {
      if (!(seg in node)) return false;
      node = node[seg];
    } else return true;
  }
  return true;
}

/** Options of `loadConfig`. */
export interface LoadConfigOptions {
  /**
   * Preset names (`frozenlake-ppo`, `algo/grpo`: looked up in configs/) or YAML paths, merged in order; none uses the
   * defaults alone.
   */
  config?: string | readonly string[];
  /** `dotted.key=value` overrides, applied in order after the preset. */
  overrides?: readonly string[];
}

/** Defaults <- preset (and what it `extends`) <- overrides, validated and frozen. */
export function loadConfig(options: LoadConfigOptions = {}): RagenConfig {
  const files =
    options.config === undefined ? [] : typeof options.config === 'string' ? [options.config] : options.config;
  const layers = files.flatMap((f) => readConfigLayers(presetPath(f)));
  return resolveConfig(layers, options.overrides ?? []);
}

/**
 * The layers of one YAML file: those of the files it `extends` (a path relative to it, or a preset
 * name; a string or a list, merged in order), then its own keys.
 */
export function readConfigLayers(file: string, seen: readonly string[] = []): ConfigLayer[] {
  const abs = resolve(file);
  if (seen.includes(abs))
    throw new ConfigError(
      `Config \`${shortPath(abs)}\` extends itself: ${[...seen, abs].map(shortPath).join(' -> ')}.`,
    );
  let data: unknown;
  try {
    data = parseYaml(readFileSync(abs, 'utf8')) ?? {};
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') throw new ConfigError(`Config file \`${shortPath(abs)}\` does not exist.`);
    throw new ConfigError(`Config file \`${shortPath(abs)}\` is not valid YAML: ${e.message.split('\n')[0]}`);
  }
  if (!isPlainObject(data))
    throw new ConfigError(
      `Config file \`${shortPath(abs)}\` must hold a YAML mapping (key: value lines), not ${Array.isArray(data) ? 'a list' : typeof data}.`,
    );
  const bad = nonPlainData(data);
  if (bad) throw new ConfigError(`Config file \`${shortPath(abs)}\`: ${bad}.`);
  const { extends: ext, ...own } = data;
  const parents = ext === undefined ? [] : Array.isArray(ext) ? ext : [ext];
  const layers: ConfigLayer[] = [];
  for (const p of parents) {
    if (typeof p !== 'string')
      throw new ConfigError(
        `\`extends\` in \`${shortPath(abs)}\` must be a file name or a list of them, got ${JSON.stringify(p)}.`,
      );
    const sibling = resolve(dirname(abs), p);
    let target: string;
    try {
      target = existsSync(sibling) ? sibling : existsSync(`${sibling}.yaml`) ? `${sibling}.yaml` : presetPath(p);
    } catch (err) {
      throw new ConfigError(`\`extends: ${p}\` in \`${shortPath(abs)}\`: ${(err as Error).message}`);
    }
    layers.push(...readConfigLayers(target, [...seen, abs]));
  }
  layers.push({ source: shortPath(abs), data: relativeToFile(own, dirname(abs)) });
  return layers;
}

/**
 * A file's `model.path` / `model.critic.path` that is no directory from the working directory but is one next to the
 * file, made absolute: a preset can name a model beside it, and a path that exists from where the command runs keeps
 * meaning that one (names like `ragen-tiny` and Hub ids are resolved when the run starts).
 */
function relativeToFile(data: Record<string, unknown>, dir: string): Record<string, unknown> {
  const model = data.model;
  if (!isPlainObject(model)) return data;
  const fix = (p: unknown): unknown => {
    if (typeof p !== 'string' || p === '' || isAbsolute(p) || existsSync(resolve(p))) return p;
    const beside = resolve(dir, p);
    return existsSync(beside) && statSync(beside).isDirectory() ? beside : p;
  };
  const critic =
    isPlainObject(model.critic) && 'path' in model.critic
      ? { critic: { ...model.critic, path: fix(model.critic.path) } }
      : {};
  return { ...data, model: { ...model, ...('path' in model ? { path: fix(model.path) } : {}), ...critic } };
}

/** The folder of shipped presets: `configs/` at the package root. */
export function presetsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'configs'))) return join(dir, 'configs');
    dir = dirname(dir);
  }
  throw new ConfigError('Cannot find the `configs/` folder of the ragen-ts package.');
}

/** Names of the shipped presets (paths under configs/ without `.yaml`, e.g. `sokoban-ppo`, `algo/grpo`), sorted. */
export function listPresets(): string[] {
  const root = presetsDir();
  const walk = (dir: string, prefix: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? walk(join(dir, e.name), `${prefix}${e.name}/`)
        : e.name.endsWith('.yaml')
          ? [`${prefix}${e.name.slice(0, -'.yaml'.length)}`]
          : [],
    );
  return walk(root, '').sort();
}

/**
 * Resolve a preset name (`sokoban-ppo`, `algo/grpo`) or a path to an existing YAML file, or a ConfigError naming the
 * nearest preset.
 */
export function presetPath(nameOrPath: string): string {
  for (const p of [nameOrPath, `${nameOrPath}.yaml`]) {
    if (existsSync(p) && statSync(p).isFile()) return resolve(p);
  }
  if (!isAbsolute(nameOrPath)) {
    const inPresets = join(presetsDir(), nameOrPath.endsWith('.yaml') ? nameOrPath : `${nameOrPath}.yaml`);
    if (existsSync(inPresets)) return inPresets;
  }
  const presets = listPresets();
  const name = nameOrPath.replace(/^(\.\/)?configs\//, '').replace(/\.yaml$/, '');
  throw new ConfigError(
    `Config \`${nameOrPath}\` is neither a file nor a preset.${didYouMean(name, presets)} Presets: ${presets.join(', ')}.`,
  );
}

/** The config as YAML: every key, in schema order, with a header saying how to reuse it. */
export function configToYaml(config: RagenConfig): string {
  const header = '# Resolved ragen-ts config (every key). Reuse: ragen train --config <this file> [key=value ...]\n';
  return header + stringifyYaml(config, { lineWidth: 0 });
}

/** Write `config.yaml` into `dir` (created if needed); returns the file path. */
export function saveConfig(config: RagenConfig, dir: string): string {
  const file = join(dir, CONFIG_FILE);
  writeFileAt(file, configToYaml(config), 'save the config');
  return file;
}

/** Load a saved config: a `config.yaml` path, or a run or checkpoint directory holding one; overrides apply on top. */
export function loadSavedConfig(pathOrDir: string, overrides: readonly string[] = []): RagenConfig {
  const file = existsSync(pathOrDir) && statSync(pathOrDir).isDirectory() ? join(pathOrDir, CONFIG_FILE) : pathOrDir;
  if (!existsSync(file))
    throw new ConfigError(`No saved config at \`${shortPath(file)}\` (a run directory holds \`${CONFIG_FILE}\`).`);
  const layers = readConfigLayers(file).map((layer) => {
    const m = migrateSavedConfig(layer.data as Record<string, unknown>, layer.source);
    if (m.changes.length > 0)
      process.stderr.write(
        `ragen: \`${layer.source}\` was saved with old config keys; read as today's: ${m.changes.join(', ')}\n`,
      );
    return { ...layer, data: m.data };
  });
  return resolveConfig(layers, overrides);
}

/** Deep-freeze plain data in place and return it. */
export function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

function shortPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : p;
}
