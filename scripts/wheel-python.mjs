// The torch engine tests' interpreters. The main lane: $RAGEN_TORCH2_PYTHON when set, else the project's virtual
// environment (.venv, which .ci/run makes from the machine's wheels: current PyTorch, transformers, PEFT, TensorBoard,
// pytest), else null (then the tests take the first python with torch: src/engine/torch-testing.ts). The oldest-torch
// lane: $RAGEN_OLDEST_TORCH_PYTHON when set, else Debian's /usr/bin/python3 (bookworm's python3-torch 1.13).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');
export const VENV_PYTHON = join(ROOT, '.venv', 'bin', 'python');
/** How to make the main lane's interpreter, for the messages that say it is missing. */
export const VENV_FIX =
  "make the project's wheel environment as .ci/run does (`python3 -m venv .venv && .venv/bin/pip install " +
  "'torch>=2' transformers peft tensorboard pytest`) or point RAGEN_TORCH2_PYTHON at an interpreter with torch >= 2";
/** How to get the oldest-torch lane's interpreter. */
export const OLDEST_FIX =
  '`apt-get install python3-torch python3-pytest` (Debian bookworm: torch 1.13, the oldest the worker supports) or ' +
  'point RAGEN_OLDEST_TORCH_PYTHON at an interpreter with an older torch than the main lane';

export function torch2Python() {
  if (process.env.RAGEN_TORCH2_PYTHON) return process.env.RAGEN_TORCH2_PYTHON;
  return existsSync(VENV_PYTHON) ? VENV_PYTHON : null;
}

export function oldestTorchPython() {
  return process.env.RAGEN_OLDEST_TORCH_PYTHON || '/usr/bin/python3';
}
