// Test helper: the interpreter the torch engine tests use. The main lane is the project's wheel environment (.venv,
// current PyTorch); without it, the first python with torch (a developer's machine), saying so once; without any torch
// the tests are skipped, unless RAGEN_REQUIRE_BACKENDS=1 (CI), where a missing torch is a failure naming the fix.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { backendsRequired } from '../tensor/testing.js';
import { findTorchPython, TORCH_MISSING } from './python.js';
import { workerPackageDir } from './torch-worker.js';

let cached: string | null | undefined;

// vitest runs test files in parallel on few cores: one torch thread per worker (more spin and contend).
process.env.RAGEN_TORCH_THREADS ??= '1';

/** The wheel environment's interpreter: $RAGEN_TORCH2_PYTHON, else the project's .venv (scripts/wheel-python.mjs). */
function wheelCandidate(): string | null {
  const venv = join(workerPackageDir(), '..', '.venv', 'bin', 'python');
  return process.env.RAGEN_TORCH2_PYTHON || (existsSync(venv) ? venv : null);
}

/**
 * The Python with torch for the torch engine tests, or null (skip) when there is none and CI does not require it:
 * $RAGEN_PYTHON when set (a lane's choice: scripts/test-torch-oldest.mjs sets Debian's torch 1.13), else the wheel
 * environment when it imports torch >= 2 (the main lane), else the first of python3 and /usr/bin/python3 with torch.
 * The choice is written to RAGEN_PYTHON, so that engines started without a `python` option and the CLI runs the tests
 * start (findTorchPython) take the same interpreter.
 */
export function torchPythonForTests(): string | null {
  if (cached !== undefined) return cached;
  if (process.env.RAGEN_PYTHON) {
    cached = findTorchPython()?.python ?? null;
  } else {
    const wheel = wheelCandidate();
    const probe = 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)';
    if (wheel && spawnSync(wheel, ['-c', probe], { timeout: 120_000 }).status === 0) cached = wheel;
    else if (backendsRequired())
      throw new Error(
        `RAGEN_REQUIRE_BACKENDS=1 runs the torch engine tests on the project's wheel environment (current PyTorch), and ${wheel ?? 'there is no .venv'}${wheel ? ' does not import torch >= 2' : ''}: make .venv as .ci/run does, point RAGEN_TORCH2_PYTHON at an interpreter with torch >= 2, or set RAGEN_PYTHON to choose one.`,
      );
    else {
      const found = findTorchPython();
      cached = found?.python ?? null;
      if (found && !warned) {
        warned = true;
        console.warn(
          `torch engine tests: no wheel environment (${wheel ?? '.venv is missing'}${wheel ? ' has no torch >= 2' : ''}); they run on ${found.python} (torch ${found.torchVersion}). CI runs them on current PyTorch: make .venv as .ci/run does to test what CI tests.`,
        );
      }
    }
    if (cached) process.env.RAGEN_PYTHON = cached;
  }
  if (!cached && backendsRequired())
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires PyTorch for the torch engine tests, and none was found. ${TORCH_MISSING}`,
    );
  return cached;
}
let warned = false;

let wheelCached: string | null | undefined;

/** The wheel environment's interpreter with transformers (scripts/wheel-python.mjs's choice: $RAGEN_TORCH2_PYTHON, else the
 *  project's .venv, which .ci/run makes from the machine's wheels), or null (skip) when neither imports torch >= 2 and
 *  transformers and CI does not require it. */
export function wheelPythonForTests(): string | null {
  if (wheelCached !== undefined) return wheelCached;
  const python = wheelCandidate();
  const probe = 'import sys, torch, transformers; sys.exit(int(torch.__version__.split(".")[0]) < 2)';
  wheelCached = python && spawnSync(python, ['-c', probe], { timeout: 120_000 }).status === 0 ? python : null;
  if (!wheelCached && backendsRequired())
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires the wheel environment's interpreter with transformers (${python ?? 'no .venv'} does not import torch >= 2 and transformers): make the project's .venv as .ci/run does, or point RAGEN_TORCH2_PYTHON at one.`,
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
