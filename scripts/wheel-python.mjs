// The torch 2 lane's interpreter: $RAGEN_TORCH2_PYTHON when set, else the project's virtual environment (.venv, which
// .ci/run makes from the machine's wheels: current PyTorch, transformers, PEFT, TensorBoard, pytest), else null.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');
export const VENV_PYTHON = join(ROOT, '.venv', 'bin', 'python');
/** How to make the lane's interpreter, for the messages that say it is missing. */
export const VENV_FIX =
  "make the project's wheel environment as .ci/run does (`python3 -m venv .venv && .venv/bin/pip install " +
  "'torch>=2' transformers peft tensorboard pytest`) or point RAGEN_TORCH2_PYTHON at an interpreter with torch >= 2";

export function torch2Python() {
  if (process.env.RAGEN_TORCH2_PYTHON) return process.env.RAGEN_TORCH2_PYTHON;
  return existsSync(VENV_PYTHON) ? VENV_PYTHON : null;
}
