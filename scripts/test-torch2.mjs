// `npm test`'s last part: the torch worker's torch >= 2 paths (scaled_dot_product_attention in the parity tests
// against the local engine, torch.compile, torchrun on a torch built without libuv, FSDP2 on CPU ranks), which the
// main run does not reach where its interpreter has an older torch (Debian bookworm's 1.13, the oldest supported).
// Runs those test files again with the project's wheel environment (.venv; .ci/run makes it) or RAGEN_TORCH2_PYTHON;
// skipped, and says so, without one; with RAGEN_REQUIRE_BACKENDS=1 (CI) that is a failure.
import { spawnSync } from 'node:child_process';
import { ROOT, VENV_FIX, torch2Python } from './wheel-python.mjs';

const FILES = [
  'src/engine/torch.test.ts',
  'src/engine/torch-dp.test.ts',
  'src/engine/torch-fsdp.test.ts',
  'src/engine/torch-compile.test.ts',
];
const required = process.env.RAGEN_REQUIRE_BACKENDS === '1';
const lastLine = (text) => (text ?? '').trim().split('\n').pop();

function refuse(message) {
  if (required) {
    console.error(`torch 2 lane: ${message}; RAGEN_REQUIRE_BACKENDS=1 makes this a failure`);
    process.exit(1);
  }
  console.log(`torch 2 lane: skipped (${message})`);
  process.exit(0);
}

const python = torch2Python();
if (!python) refuse(`there is no .venv and RAGEN_TORCH2_PYTHON is not set: ${VENV_FIX}`);
const v = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { cwd: ROOT, encoding: 'utf8' });
const major = Number(/^(\d+)\./.exec(v.stdout ?? '')?.[1]);
if (v.status !== 0 || !(major >= 2)) {
  const what =
    v.status !== 0 ? `does not import torch (${lastLine(v.stderr)})` : `has torch ${v.stdout.trim()}, not 2.x`;
  if (process.env.RAGEN_TORCH2_PYTHON) {
    console.error(
      `torch 2 lane: RAGEN_TORCH2_PYTHON=${python} ${what}; unset it or point it at an interpreter with torch >= 2`,
    );
    process.exit(1);
  }
  refuse(`${python} ${what}: ${VENV_FIX}`);
}
console.log(`torch 2 lane: ${FILES.join(', ')} with torch ${v.stdout.trim()} (${python})`);
const r = spawnSync('npx', ['vitest', 'run', ...FILES], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, RAGEN_PYTHON: python },
});
process.exit(r.status ?? 1);
