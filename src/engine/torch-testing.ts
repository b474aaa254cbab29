// Test helper: the interpreter the torch engine tests use. Without PyTorch they are skipped, unless
// RAGEN_REQUIRE_BACKENDS=1 (CI), where a missing torch is a failure that says how to install it.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { backendsRequired } from '../tensor/testing.js';
import { findTorchPython, TORCH_MISSING } from './python.js';
import { workerPackageDir } from './torch-worker.js';

let cached: string | null | undefined;

// vitest runs test files in parallel on few cores: one torch thread per worker (more spin and contend).
process.env.RAGEN_TORCH_THREADS ??= '1';

/** The Python with torch, or null (skip) when there is none and CI does not require it. */
export function torchPythonForTests(): string | null {
  if (cached !== undefined) return cached;
  cached = findTorchPython()?.python ?? null;
  if (!cached && backendsRequired())
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires PyTorch for the torch engine tests, and none was found. ${TORCH_MISSING}`,
    );
  return cached;
}

let wheelCached: string | null | undefined;

/** The torch 2 lane's interpreter with transformers (scripts/wheel-python.mjs's choice: $RAGEN_TORCH2_PYTHON, else the
 *  project's .venv, which .ci/run makes from the machine's wheels), or null (skip) when neither imports torch >= 2 and
 *  transformers and CI does not require it. */
export function wheelPythonForTests(): string | null {
  if (wheelCached !== undefined) return wheelCached;
  const venv = join(workerPackageDir(), '..', '.venv', 'bin', 'python');
  const python = process.env.RAGEN_TORCH2_PYTHON || (existsSync(venv) ? venv : null);
  const probe = 'import sys, torch, transformers; sys.exit(int(torch.__version__.split(".")[0]) < 2)';
  wheelCached = python && spawnSync(python, ['-c', probe], { timeout: 120_000 }).status === 0 ? python : null;
  if (!wheelCached && backendsRequired())
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires the torch 2 lane's interpreter with transformers (${python ?? 'no .venv'} does not import torch >= 2 and transformers): make the project's .venv as .ci/run does, or point RAGEN_TORCH2_PYTHON at one.`,
    );
  return wheelCached;
}

/** Run `python` with `args` (`-c` and a script, `-m` and a module) where the worker's package imports (python/ on
 *  PYTHONPATH), with `env` added to this process's environment. */
export function runWorkerPython(
  python: string,
  args: string[],
  timeoutMs = 60_000,
  env: NodeJS.ProcessEnv = {},
): SpawnSyncReturns<string> {
  return spawnSync(python, args, {
    encoding: 'utf8',
    env: { ...process.env, ...env, PYTHONPATH: workerPackageDir() },
    timeout: timeoutMs,
  });
}
