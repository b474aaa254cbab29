// Test helper: the interpreter the torch engine tests use. Without PyTorch they are skipped, unless
// RAGEN_REQUIRE_BACKENDS=1 (CI), where a missing torch is a failure that says how to install it.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
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
