// The user's side of an MCP env: tasks (a JSON/JSONL file or a `task(seed, mode)` module) and the verifier
// (`verify(episode) -> {reward, success, done}`), loaded once per path and checked with errors that say the fix.
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, RagenError } from '../../util/index.js';
import type { ReadyMcpConfig } from './schema.js';

/** A task: what the model is asked (`prompt`) plus anything the verifier needs (e.g. `target`). */
export interface McpTask {
  prompt: string;
  [key: string]: unknown;
}

/** One tool call of an episode as the verifier sees it. */
export interface McpCallRecord {
  name: string;
  arguments: Record<string, unknown>;
  /** The result's text (or the error's). */
  result: string;
  /** The tool (or the server) reported an error. */
  isError: boolean;
}

/** What the verifier gets when the model gives its final answer. */
export interface VerifierInput {
  task: McpTask;
  /** Every call that reached the server, in order. */
  calls: McpCallRecord[];
  /** The final answer's text (the action without a tool call). */
  answer: string;
  seed: number;
  mode: 'train' | 'val';
}

/** The verifier's verdict, defaults filled. */
export interface Verdict {
  reward: number;
  /** @default reward > 0 */
  success: boolean;
  /** Whether the episode ends; false lets the model try again (its calls so far kept). @default true */
  done: boolean;
}

/** A verifier function: returns a reward, or `{reward, success?, done?}`, or a promise of either. */
export type Verifier = (input: VerifierInput) => unknown;

/** A verifier or task function's code raised or returned something unusable (the user's bug, named with its fix). */
export class McpUserCodeError extends RagenError {}

const modules = new Map<string, Promise<Record<string, unknown>>>();

function moduleSpecifier(path: string): string {
  // a path (relative to the working directory) or a package name
  if (isAbsolute(path) || path.startsWith('.') || /\.(m?js|cjs)$/.test(path)) {
    const abs = resolve(path);
    if (!existsSync(abs))
      throw new ConfigError(
        `MCP env module \`${path}\` does not exist (resolved to ${abs}); paths are relative to the working directory.`,
      );
    return pathToFileURL(abs).href;
  }
  return path;
}

/** The function `name` exported by `path`, imported once per process. */
async function loadFunction(path: string, name: string, key: string): Promise<(...args: unknown[]) => unknown> {
  const spec = moduleSpecifier(path);
  let mod = modules.get(spec);
  if (!mod) {
    mod = import(spec) as Promise<Record<string, unknown>>;
    modules.set(spec, mod);
  }
  let loaded: Record<string, unknown>;
  try {
    loaded = await mod;
  } catch (err) {
    modules.delete(spec);
    throw new ConfigError(`MCP env \`${key}\`: importing \`${path}\` failed: ${(err as Error).message}`);
  }
  const fn = loaded[name];
  if (typeof fn !== 'function') {
    const found = Object.keys(loaded).filter((k) => typeof loaded[k] === 'function');
    throw new ConfigError(
      `MCP env \`${key}\`: \`${path}\` exports no function \`${name}\` (its functions: ${found.join(', ') || 'none'}); set \`${key}.export\`.`,
    );
  }
  return fn as (...args: unknown[]) => unknown;
}

const taskFiles = new Map<string, McpTask[]>();

function checkTask(t: unknown, where: string): McpTask {
  if (
    typeof t !== 'object' ||
    t === null ||
    Array.isArray(t) ||
    typeof (t as { prompt?: unknown }).prompt !== 'string'
  ) {
    throw new ConfigError(
      `MCP env task ${where} is ${JSON.stringify(t)?.slice(0, 120)}; each task must be an object with a "prompt" string.`,
    );
  }
  return t as McpTask;
}

/** The tasks of a `.json` (array) or `.jsonl` file, read once per path. */
export function loadTaskFile(path: string): McpTask[] {
  const abs = resolve(path);
  const cached = taskFiles.get(abs);
  if (cached) return cached;
  if (!existsSync(abs))
    throw new ConfigError(
      `MCP env tasks file \`${path}\` does not exist (resolved to ${abs}); paths are relative to the working directory.`,
    );
  const text = readFileSync(abs, 'utf8');
  let tasks: McpTask[];
  if (abs.endsWith('.jsonl')) {
    tasks = [];
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      let t: unknown;
      try {
        t = JSON.parse(line);
      } catch (err) {
        throw new ConfigError(
          `MCP env tasks file \`${path}\` line ${i + 1} is not JSON (${(err as Error).message}); write one task object per line.`,
        );
      }
      tasks.push(checkTask(t, `at ${path}:${i + 1}`));
    });
  } else {
    let all: unknown;
    try {
      all = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(
        `MCP env tasks file \`${path}\` is not JSON (${(err as Error).message}); give a JSON array of tasks or a .jsonl file.`,
      );
    }
    if (!Array.isArray(all))
      throw new ConfigError(
        `MCP env tasks file \`${path}\` holds no JSON array; give an array of task objects (or a .jsonl file).`,
      );
    tasks = all.map((t, i) => checkTask(t, `${i} of ${path}`));
  }
  if (tasks.length === 0)
    throw new ConfigError(`MCP env tasks file \`${path}\` has no tasks; add at least one {"prompt": ...} object.`);
  taskFiles.set(abs, tasks);
  return tasks;
}

/** The task of `seed`: task `seed mod n` of the file (both modes), or what the module's function returns. */
export async function taskFor(tasks: ReadyMcpConfig['tasks'], seed: number, mode: 'train' | 'val'): Promise<McpTask> {
  if ('file' in tasks) {
    const all = loadTaskFile(tasks.file);
    return all[((seed % all.length) + all.length) % all.length]!;
  }
  const fn = await loadFunction(tasks.module, tasks.export, 'tasks');
  const t = await fn(seed, mode);
  if (typeof t !== 'object' || t === null || typeof (t as { prompt?: unknown }).prompt !== 'string') {
    throw new McpUserCodeError(
      `MCP env tasks: \`${tasks.export}(${seed}, "${mode}")\` of \`${tasks.module}\` returned ${JSON.stringify(t)?.slice(0, 120)}; return an object with a "prompt" string.`,
    );
  }
  return t as McpTask;
}

/** Run the verifier and check its verdict: a finite reward, optional boolean `success` and `done`. */
export async function verify(ref: ReadyMcpConfig['verifier'], input: VerifierInput): Promise<Verdict> {
  const fn = await loadFunction(ref.module, ref.export, 'verifier');
  let out: unknown;
  try {
    out = await fn(input);
  } catch (err) {
    throw new McpUserCodeError(
      `MCP env verifier \`${ref.export}\` of \`${ref.module}\` threw on seed ${input.seed}: ${(err as Error)?.message ?? String(err)}; fix the verifier (it must return {reward, success?, done?}).`,
    );
  }
  const v =
    typeof out === 'number' ? { reward: out } : (out as { reward?: unknown; success?: unknown; done?: unknown } | null);
  const bad = (what: string) =>
    new McpUserCodeError(
      `MCP env verifier \`${ref.export}\` of \`${ref.module}\` returned ${JSON.stringify(out)?.slice(0, 120)} on seed ${input.seed}: ${what}; return a number or {reward, success?, done?}.`,
    );
  if (typeof v !== 'object' || v === null) throw bad('not an object');
  if (typeof v.reward !== 'number' || !Number.isFinite(v.reward)) throw bad('`reward` is not a finite number');
  if (v.success !== undefined && typeof v.success !== 'boolean') throw bad('`success` is not a boolean');
  if (v.done !== undefined && typeof v.done !== 'boolean') throw bad('`done` is not a boolean');
  return { reward: v.reward, success: v.success ?? v.reward > 0, done: v.done ?? true };
}
