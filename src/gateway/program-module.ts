// The functions an agent block names by module (an in-process agent, a task verifier): the file resolved against the
// agent's `cwd` (else the trainer's working directory), imported and its export checked when the run starts, so a
// typo is one ConfigError before any episode instead of a crash in the middle of a rollout.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { programEnv, type AgentProgramConfig } from '../agent/index.js';
import { ConfigError } from '../util/index.js';
import type { AgentFunction, AgentProgram, TaskVerifier } from './runner.js';

/**
 * Import `spec.module` (relative to `base`) and return its function export `spec.export`; `key` names the config key in
 * errors.
 */
export async function loadExport(
  spec: { module: string; export: string },
  base: string,
  key: string,
): Promise<(...args: never[]) => unknown> {
  const file = isAbsolute(spec.module) ? spec.module : resolve(base, spec.module);
  if (!existsSync(file))
    throw new ConfigError(
      `\`${key}\` = ${JSON.stringify(spec.module)} does not exist (looked for ${file}, relative paths start at ${base}); give the path of an ES module that exports the function.`,
    );
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(
      `\`${key}\` = ${JSON.stringify(spec.module)} could not be imported: ${(err as Error)?.message ?? String(err)}. Fix the module (it must be an ES module Node can load).`,
    );
  }
  const fn = mod[spec.export];
  if (typeof fn !== 'function') {
    const found = Object.keys(mod).filter((k) => typeof mod[k] === 'function');
    throw new ConfigError(
      `\`${key}\`: ${file} has no exported function \`${spec.export}\` (its function exports: ${found.length > 0 ? found.join(', ') : 'none'}); set \`export\` to one of them.`,
    );
  }
  return fn as (...args: never[]) => unknown;
}

/**
 * The runner's program for a validated agent block: the command as is, or the module's function; the verifier loaded.
 */
export async function resolveAgentProgram(config: AgentProgramConfig, where = 'agent'): Promise<AgentProgram> {
  const base = config.cwd === null ? process.cwd() : resolve(config.cwd);
  const agent =
    config.module === null
      ? null
      : ((await loadExport(
          { module: config.module, export: config.export },
          base,
          `${where}.module`,
        )) as AgentFunction);
  const verifier =
    config.verifier === null
      ? null
      : ((await loadExport(config.verifier, base, `${where}.verifier.module`)) as TaskVerifier);
  return {
    command: config.command,
    agent,
    verifier,
    timeoutS: config.timeoutS,
    cwd: config.cwd,
    env: programEnv(config),
  };
}
