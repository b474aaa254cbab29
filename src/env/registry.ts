// The environment registry: ids (RAGEN's tag names) -> factory + typed, validated config.
// Follows Gymnasium's registration.py (register / make, did-you-mean on unknown ids).
import { z } from 'zod';
import { ConfigError, EnvNotFoundError, didYouMean } from '../util/index.js';
import type { Env, ObservationSpace } from './core.js';
import { wrapEnv, type WrapOptions } from './wrap-env.js';

/** Everything the registry knows about one env id. `C` is the env's validated config type. */
export interface EnvSpec<C extends Record<string, unknown> = Record<string, unknown>> {
  /** One line for `ragen envs`. */
  description: string;
  /** Validates the config and fills defaults. Must be a zod object so unknown keys can be reported. */
  schema: z.ZodType<C> & { shape: Record<string, z.ZodType> };
  /** Config values this id sets over the schema's defaults (RAGEN's per-tag `env_config`). */
  defaults?: Partial<C>;
  create(config: C): Env;
  /** What the env's observations carry under `config` (images and their size); undefined: text only. */
  observationSpace?(config: C): ObservationSpace;
  /**
   * An outside service the env cannot run without (e.g. "a Kimina Lean server at serverUrl"): `ragen envs`
   * names it, and the registry-wide checks (checkEnv, `ragen bench envs`) leave the id to its own tests.
   */
  requires?: string;
  /** Most actions one episode may take (RAGEN's `max_actions_per_traj`). */
  maxActionsPerEpisode: number;
  /** The optimal (or a correct) action sequence for a seed, where the problem allows a solver. */
  solve?(config: C, seed: number, mode?: 'train' | 'val'): string[] | undefined;
  /**
   * Whether chance can defeat the solver's actions under this config (a slippery lake: the actions are
   * the shortest safe path, a plan, and a slip may land in a hole). Without it a failing solution is a bug.
   * @default never
   */
  solverMayFail?(config: C): boolean;
}

const registry = new Map<string, EnvSpec<any>>();

/** Register an env id. Re-registering an id is an error (ids are user-facing and must be unique). */
export function registerEnv<C extends Record<string, unknown>>(id: string, spec: EnvSpec<C>): void {
  if (registry.has(id)) throw new ConfigError(`Environment \`${id}\` is already registered; pick another id.`);
  registry.set(id, spec);
}

const aliases = new Map<string, string>();

/**
 * Let `alias` name the registered id `id` (a config's `remote:ws://host:port/Sokoban` names the
 * remote env registered as `Sokoban@host:port`). Re-pointing an alias is an error.
 */
export function registerEnvAlias(alias: string, id: string): void {
  if (!registry.has(id)) throw new ConfigError(`Cannot alias \`${alias}\` to \`${id}\`: no env has that id.`);
  const old = aliases.get(alias);
  if (old !== undefined && old !== id) throw new ConfigError(`The env alias \`${alias}\` already names \`${old}\`.`);
  aliases.set(alias, id);
}

/**
 * The registered id `id` names: the id itself, an alias of it, or the one id equal to it ignoring case
 * (`metamathqa` -> `MetamathQA`). Unknown ids are an error naming the nearest id.
 */
export function resolveEnvId(id: string): string {
  if (registry.has(id)) return id;
  const aliased = aliases.get(id);
  if (aliased !== undefined) return aliased;
  if (id.startsWith('remote:')) {
    throw new EnvNotFoundError(
      `The remote environment \`${id}\` is not connected yet: \`await registerRemoteEnv(${JSON.stringify(id)})\` first (ragen play, eval and train do this for you).`,
    );
  }
  const lower = id.toLowerCase();
  const same = [...registry.keys()].filter((k) => k.toLowerCase() === lower);
  if (same.length === 1) return same[0]!;
  throw new EnvNotFoundError(
    `Environment \`${id}\` does not exist.${didYouMean(id, registry.keys())} Run \`ragen envs\` for the list.`,
  );
}

/** The spec of a registered id, or an error naming the nearest id. */
export function envSpec(id: string): EnvSpec {
  return registry.get(resolveEnvId(id))!;
}

/** Validate `overrides` over the id's defaults: unknown keys and bad values are `ConfigError`s. */
export function resolveEnvConfig(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const spec = envSpec(id);
  const known = Object.keys(spec.schema.shape);
  for (const key of Object.keys(overrides)) {
    if (!known.includes(key)) {
      throw new ConfigError(
        `Unknown config key \`${key}\` for environment \`${id}\`.${didYouMean(key, known)} Valid keys: ${known.join(', ')}.`,
      );
    }
  }
  const result = spec.schema.safeParse({ ...spec.defaults, ...overrides });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = issue.path.join('.');
    const value = key
      ? JSON.stringify((overrides as any)[issue.path[0] as string] ?? (spec.defaults as any)?.[issue.path[0] as string])
      : '';
    throw new ConfigError(
      `Bad config for environment \`${id}\`: \`${key}\`${value ? ` = ${value}` : ''}: ${issue.message}.`,
    );
  }
  // Nested objects (Sokoban's gridVocab) drop unknown keys while parsing: find any the output lacks.
  for (const key of Object.keys(overrides)) {
    const lost = droppedKey(overrides[key], result.data[key], [key]);
    if (lost) {
      const name = lost.path.join('.');
      const where = lost.path.slice(0, -1).join('.');
      throw new ConfigError(
        `Unknown config key \`${name}\` for environment \`${id}\`.${didYouMean(lost.path.at(-1)!, lost.known)} Valid keys of ${where}: ${lost.known.join(', ')}.`,
      );
    }
  }
  return result.data as Record<string, unknown>;
}

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/** The first key of `input` (at any depth) that the parsed `output` does not have, with the keys it has. */
function droppedKey(input: unknown, output: unknown, path: string[]): { path: string[]; known: string[] } | undefined {
  if (!isPlainObject(input) || !isPlainObject(output)) return undefined;
  for (const key of Object.keys(input)) {
    if (!(key in output)) return { path: [...path, key], known: Object.keys(output) };
    const deeper = droppedKey(input[key], output[key], [...path, key]);
    if (deeper) return deeper;
  }
  return undefined;
}

/**
 * Create an env by id with optional config overrides. Without `options` the bare env comes back;
 * with any (`{maxActions: 10}`, `{episodeStatistics: true}`) it is wrapped by `wrapEnv`, which also
 * enforces reset-before-step. Pass `maxActions: envSpec(id).maxActionsPerEpisode` for RAGEN's cap.
 */
export function makeEnv(id: string, config: Record<string, unknown> = {}, options?: WrapOptions): Env {
  const env = envSpec(id).create(resolveEnvConfig(id, config));
  return options ? wrapEnv(env, options) : env;
}

/** Every registered id with its description, in registration order. */
export function listEnvs(): { id: string; description: string }[] {
  return [...registry].map(([id, spec]) => ({ id, description: spec.description }));
}
