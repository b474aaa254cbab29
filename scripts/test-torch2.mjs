// `npm test`'s last part: the torch worker's torch >= 2 paths (scaled_dot_product_attention in the parity tests
// against the local engine, torch.compile, torchrun on a torch built without libuv, FSDP2 on CPU ranks), which the
// main run cannot reach on Debian bookworm's torch 1.13. Runs those test files again with the interpreter named by
// RAGEN_TORCH2_PYTHON (`sh scripts/torch2-chroot.sh <folder>` makes one; .ci/run does); skipped, and says so, without.
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const FILES = [
  'src/engine/torch.test.ts',
  'src/engine/torch-dp.test.ts',
  'src/engine/torch-fsdp.test.ts',
  'src/engine/torch-compile.test.ts',
];
const python = process.env.RAGEN_TORCH2_PYTHON;
const ROOT = resolve(import.meta.dirname, '..');
const lastLine = (text) => (text ?? '').trim().split('\n').pop();

if (!python) {
  console.log(
    'torch 2 lane: skipped (RAGEN_TORCH2_PYTHON is not set; `sh scripts/torch2-chroot.sh <folder>` makes an interpreter for it)',
  );
  process.exit(0);
}
const v = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { cwd: ROOT, encoding: 'utf8' });
const major = Number(/^(\d+)\./.exec(v.stdout ?? '')?.[1]);
if (v.status !== 0 || !(major >= 2)) {
  console.error(
    `torch 2 lane: RAGEN_TORCH2_PYTHON=${python} ${v.status !== 0 ? `does not import torch: ${lastLine(v.stderr)}` : `has torch ${v.stdout.trim()}, not 2.x`}; unset it or point it at an interpreter with torch >= 2`,
  );
  process.exit(1);
}
// A chroot's interpreter sees this project only through a bind mount (torch2-chroot.sh makes it); one that shows a
// deleted folder, or none, would fail every test with "No module named ragen_torch". Say that once instead.
const pkg = spawnSync(python, ['-c', 'import ragen_torch'], {
  cwd: ROOT,
  encoding: 'utf8',
  env: { ...process.env, PYTHONPATH: join(ROOT, 'python') },
});
if (pkg.status !== 0) {
  console.error(
    `torch 2 lane: RAGEN_TORCH2_PYTHON=${python} does not see this project's python/ragen_torch from ${ROOT} (${lastLine(pkg.stderr)}); for a chroot, run \`sudo sh scripts/torch2-chroot.sh <its folder>\` again from this clone to bind it`,
  );
  process.exit(1);
}
console.log(`torch 2 lane: ${FILES.join(', ')} with torch ${v.stdout.trim()} (${python})`);
const r = spawnSync('npx', ['vitest', 'run', ...FILES], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, RAGEN_PYTHON: python },
});
process.exit(r.status ?? 1);
