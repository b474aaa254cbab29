// `npm test`'s last part, the oldest-torch lane: the main run tests the torch engine on the project's wheel environment
// (.venv, current PyTorch); this lane runs the files that reach the worker's torch < 2 paths (attention without
// scaled_dot_product_attention, no meta device, torchrun's start on Python 3.11, the refusals of torch.compile and
// FSDP2) again on the oldest torch supported: $RAGEN_OLDEST_TORCH_PYTHON, else Debian's /usr/bin/python3 (bookworm's
// 1.13). Skipped, and says so, where there is none or it is the main run's own interpreter and torch; with
// RAGEN_REQUIRE_BACKENDS=1 (CI) a missing one is a failure.
import { spawnSync } from 'node:child_process';
import { OLDEST_FIX, ROOT, oldestTorchPython, torch2Python } from './wheel-python.mjs';

const FILES = ['src/engine/torch.test.ts', 'src/engine/torch-compile.test.ts', 'src/engine/torch-dp.test.ts'];
const required = process.env.RAGEN_REQUIRE_BACKENDS === '1';
const lastLine = (text) => (text ?? '').trim().split('\n').pop();

function refuse(message) {
  if (required) {
    console.error(`oldest-torch lane: ${message}; RAGEN_REQUIRE_BACKENDS=1 makes this a failure`);
    process.exit(1);
  }
  console.log(`oldest-torch lane: skipped (${message})`);
  process.exit(0);
}

/** torch's version as `python` imports it, or the reason it does not. */
function torchVersion(python) {
  if (!python) return { error: 'none' };
  const v = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { cwd: ROOT, encoding: 'utf8' });
  return v.status === 0 ? { version: v.stdout.trim() } : { error: lastLine(v.stderr) || `exit code ${v.status}` };
}

const python = oldestTorchPython();
const oldest = torchVersion(python);
if (oldest.error) {
  const what = `${python} does not import torch (${oldest.error})`;
  if (process.env.RAGEN_OLDEST_TORCH_PYTHON) {
    console.error(`oldest-torch lane: RAGEN_OLDEST_TORCH_PYTHON=${what}; unset it or point it at one with torch`);
    process.exit(1);
  }
  refuse(`${what}: ${OLDEST_FIX}`);
}
// The main run's interpreter, chosen as src/engine/torch-testing.ts chooses it.
const wheel = torchVersion(torch2Python());
let main = { python: torch2Python(), ...wheel };
if (process.env.RAGEN_PYTHON || !(Number(/^(\d+)\./.exec(wheel.version ?? '')?.[1]) >= 2)) {
  const candidates = process.env.RAGEN_PYTHON ? [process.env.RAGEN_PYTHON] : ['python3', '/usr/bin/python3'];
  main = candidates.map((p) => ({ python: p, ...torchVersion(p) })).find((c) => c.version) ?? { error: 'none' };
}
if (main.version === oldest.version)
  refuse(`the main run tested the torch engine on torch ${main.version} (${main.python}) already: ${OLDEST_FIX}`);
console.log(`oldest-torch lane: ${FILES.join(', ')} with torch ${oldest.version} (${python})`);
const r = spawnSync('npx', ['vitest', 'run', ...FILES], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, RAGEN_PYTHON: python },
});
process.exit(r.status ?? 1);
