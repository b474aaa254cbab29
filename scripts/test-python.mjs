// `npm test`'s Python tier: python/tests, pytest tests that call the torch worker's handlers in-process on tiny models
// (seconds). Runs them with the first interpreter that imports torch and pytest ($RAGEN_PYTHON, python3 on PATH, then
// Debian's /usr/bin/python3: src/engine/python.ts's order), and again in the torch 2 lane: the project's wheel
// environment (.venv, current PyTorch with transformers and PEFT, which the parity tests hold the worker against) or
// $RAGEN_TORCH2_PYTHON. Without torch or pytest a lane is skipped and says so; with RAGEN_REQUIRE_BACKENDS=1 (CI) that
// is a failure naming the package to install, and the torch 2 lane's transformers/PEFT tests may not skip.
import { spawnSync } from 'node:child_process';
import { ROOT, VENV_FIX, torch2Python } from './wheel-python.mjs';

const TESTS = 'python/tests';
const required = process.env.RAGEN_REQUIRE_BACKENDS === '1';

/** {python, torch, pytest, project}: the versions it imports (null when it does not) and whether it sees this clone. */
function probe(python) {
  const code = [
    'import os, sys',
    'print(os.path.isfile("python/ragen_torch/__init__.py"))',
    'import torch; print(torch.__version__)',
    'import pytest; print(pytest.__version__)',
  ].join('\n');
  const r = spawnSync(python, ['-c', code], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  const [project, torch, pytest] = (r.stdout ?? '').trim().split('\n');
  return { python, project: project === 'True', torch: torch || null, pytest: pytest || null };
}

/** The sentence for an interpreter that cannot run the tier, or null when it can. */
function lacking(p) {
  if (!p.torch) return `${p.python} does not import torch`;
  if (!p.pytest) return `${p.python} has torch ${p.torch} but not pytest`;
  if (!p.project) return `${p.python} does not see this clone's python/ragen_torch from ${ROOT}`;
  return null;
}

function refuse(message) {
  if (required) {
    console.error(`python tier: ${message}; RAGEN_REQUIRE_BACKENDS=1 makes this a failure`);
    process.exit(1);
  }
  console.log(`python tier: skipped (${message})`);
}

function run(p, lane, env = {}) {
  console.log(`python tier${lane}: ${TESTS} with torch ${p.torch}, pytest ${p.pytest} (${p.python})`);
  // -p no:cacheprovider: no .pytest_cache folder left in the clone
  const args = ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', TESTS];
  const r = spawnSync(p.python, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status ?? 1;
}

// Every interpreter is probed before any test runs, so that a missing one fails CI at once.
const candidates = [...new Set([process.env.RAGEN_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean))];
const probes = [];
let chosen = null;
for (const python of candidates) {
  const p = probe(python);
  probes.push(p);
  if (!lacking(p)) {
    chosen = p;
    break;
  }
}
const torch2Path = torch2Python();
const torch2 = torch2Path ? probe(torch2Path) : null;
if (!torch2) refuse(`torch 2 lane: there is no .venv and RAGEN_TORCH2_PYTHON is not set; ${VENV_FIX}`);
else if (lacking(torch2)) refuse(`torch 2 lane: ${lacking(torch2)}; ${VENV_FIX}`);
if (!chosen) {
  refuse(
    `no interpreter has both torch and pytest (${probes.map(lacking).join('; ')}): ` +
      '`apt-get install python3-pytest` (with python3-torch, on Debian/Ubuntu) or `pip install torch pytest`, ' +
      'or point RAGEN_PYTHON at an interpreter with both',
  );
}
// In CI the lane's transformers/PEFT parity tests must run: RAGEN_REQUIRE_HF=1 turns their skip into a failure.
const lane2 = torch2 && !lacking(torch2);
const hf = required ? { RAGEN_REQUIRE_HF: '1' } : {};
const same = lane2 && chosen?.python === torch2.python; // RAGEN_PYTHON names the wheel environment: one run
let status = chosen ? run(chosen, same ? ' (torch 2 lane)' : '', same ? hf : {}) : 0;
if (lane2 && !same) status = run(torch2, ' (torch 2 lane)', hf) || status;
process.exit(status);
