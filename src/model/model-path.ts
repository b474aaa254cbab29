// Where `model.path` points: a directory as the user wrote it (relative to the working directory), else a model
// shipped in this package's models/ (`ragen-tiny`, also the older `models/ragen-tiny`), else a Hugging Face Hub id.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../util/index.js';
import { cachedHubModel, hubModel, isHubId, type HubModelOptions } from './hub.js';

/** This package's models/ folder (from src/ under tsx and vitest, from dist/src/ when installed). */
export function shippedModelsDir(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'models'))) return join(dir, 'models');
    dir = dirname(dir);
  }
  return null;
}

/** Names of the shipped models (folders of models/ holding a config.json). */
export function shippedModels(): string[] {
  const root = shippedModelsDir();
  if (!root) return [];
  return readdirSync(root)
    .filter((n) => existsSync(join(root, n, 'config.json')))
    .sort();
}

function isDir(p: string): boolean {
  return existsSync(p) && statSync(p).isDirectory();
}

/** The shipped model `spec` names (`ragen-tiny` or `models/ragen-tiny`), if there is one. */
function shippedModel(spec: string): string | null {
  const root = shippedModelsDir();
  const name = spec.replace(/^(\.\/)?models\//, '');
  if (!root || name.includes('/') || name.includes('\\') || name.startsWith('.')) return null;
  return isDir(join(root, name)) ? join(root, name) : null;
}

/**
 * The directory `spec` means without downloading anything: the user's path when it exists, else a shipped model,
 * else a Hub id's cached snapshot; null when none of them is there.
 */
export function findModelPath(spec: string, cacheDir?: string): string | null {
  if (isDir(resolve(spec))) return resolve(spec);
  if (isAbsolute(spec)) return null;
  return shippedModel(spec) ?? (isHubId(spec) ? cachedHubModel(spec, cacheDir) : null);
}

/**
 * `findModelPath`, and for a Hub id missing from the cache a download into it (see `hubModel`). Throws a ConfigError
 * naming the config `key` (or the command-line `flag`), the value and what was looked at when nothing matches.
 */
export async function resolveModelPath(
  spec: string,
  opts: HubModelOptions & { key?: string; flag?: string } = {},
): Promise<string> {
  const found = findModelPath(spec, opts.cacheDir);
  if (found) return found;
  const what = opts.flag ? `Bad ${opts.flag}` : `Bad config value \`${opts.key ?? 'model.path'}\``;
  if (!isAbsolute(spec) && isHubId(spec)) return hubModel(spec, opts);
  const where = isAbsolute(spec)
    ? 'no such directory'
    : `no directory ${resolve(spec)}, no shipped model of that name (${shippedModels().join(', ') || 'none'}) and no Hub id (owner/name)`;
  throw new ConfigError(
    `${what} = ${JSON.stringify(spec)}: ${where}; point it at a model directory in Hugging Face layout (config.json, model.safetensors, tokenizer.json).`,
  );
}
