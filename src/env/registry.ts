// The environment registry: ids (RAGEN's tag names) -> factory + typed, validated config.
// Follows Gymnasium's registration.py (register / make, did-you-mean on unknown ids).
import { z } from 'zod';
import { ConfigError, EnvNotFoundError, didYouMean } from '../util/index.js';
import type { Env } from './core.js';

/** Everything the registry knows about one env id. `C` is the env's validated config type. */
export interface EnvSpec<C extends Record<string, unknown> = Record<string, unknown>> {
  /** One line for `ragen envs`. */
  description: string;
  /** Validates the config and fills defaults. Must be a zod object so unknown keys can be reported. */
  schema: z.ZodType<C> & { shape: Record<string, z.ZodType> };
  /** Config values this id sets over the schema's defaults (RAGEN's per-tag `env_config`). */
  defaults?: Partial<C>;
  create(config: C): Env;
  /** Most actions one episode may take (RAGEN's `max_actions_per_traj`). */
  maxActionsPerEpisode: number;
  /** The optimal (or a correct) action sequence for a seed, where the problem allows a solver. */
  solve?(config: C, seed: number, mode?: 'train' | 'val'): string[] | undefined;
}

const registry = new Map<string, EnvSpec<any>>();

/** Register an env id. Re-registering an id is an error (ids are user-facing and must be unique). */
export function registerEnv<C extends Record<string, unknown>>(id: string, spec: EnvSpec<C>): void {
  if (registry.has(id)) throw new ConfigError(`Environment \`${id}\` is already registered; pick another id.`);
  registry.set(id, spec);
}

/** The spec of a registered id, or an error naming the nearest id. */
export function envSpec(id: string): EnvSpec {
  const spec = registry.get(id);
  if (!spec) throw new EnvNotFoundError(`Environment \`${id}\` does not exist.${didYouMean(id, registry.keys())} Run \`ragen envs\` for the list.`);
  return spec;
}

/** Validate `overrides` over the id's defaults: unknown keys and bad values are `ConfigError`s. */
export function resolveEnvConfig(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const spec = envSpec(id);
  const known = Object.keys(spec.schema.shape);
  for (const key of Object.keys(overrides)) {
    if (!known.includes(key)) {
      throw new ConfigError(`Unknown config key \`${key}\` for environment \`${id}\`.${didYouMean(key, known)} Valid keys: ${known.join(', ')}.`);
    }
  }
  const result = spec.schema.safeParse({ ...spec.defaults, ...overrides });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = issue.path.join('.');
    const value = key ? JSON.stringify((overrides as any)[issue.path[0] as string] ?? (spec.defaults as any)?.[issue.path[0] as string]) : '';
    throw new ConfigError(`Bad config for environment \`${id}\`: \`${key}\`${value ? ` = ${value}` : ''}: ${issue.message}.`);
  }
  return result.data as Record<string, unknown>;
}

/** Create an env by id with optional config overrides. */
export function makeEnv(id: string, config: Record<string, unknown> = {}): Env {
  return envSpec(id).create(resolveEnvConfig(id, config));
}

/** Every registered id with its description, in registration order. */
export function listEnvs(): { id: string; description: string }[] {
  return [...registry].map(([id, spec]) => ({ id, description: spec.description }));
}
