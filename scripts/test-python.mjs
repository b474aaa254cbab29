// `npm test`'s Python tier: python/tests, pytest tests that call the torch worker's handlers in-process on tiny models
// (seconds). The main lane runs them with the project's wheel environment (.venv, current PyTorch with transformers
// and PEFT, which the parity tests hold the worker against; or $RAGEN_TORCH2_PYTHON), the oldest-torch lane again with
// $RAGEN_OLDEST_TORCH_PYTHON or Debian's /usr/bin/python3 (bookworm's torch 1.13, the oldest supported) where its torch
// differs. Without a wheel environment the main lane takes the first interpreter with torch and pytest ($RAGEN_PYTHON,
// python3, /usr/bin/python3: src/engine/python.ts's order). A lane that cannot run is skipped and says so; with
// RAGEN_REQUIRE_BACKENDS=1 (CI) that is a failure naming what to install, and the transformers/PEFT tests may not skip.
import { spawnSync } from 'node:child_process';
import { OLDEST_FIX, ROOT, VENV_FIX, oldestTorchPython, torch2Python } from './wheel-python.mjs';

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
  console.log(`python tier (${lane}): ${TESTS} with torch ${p.torch}, pytest ${p.pytest} (${p.python})`);
  // -p no:cacheprovider: no .pytest_cache folder left in the clone
  const args = ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', TESTS];
  const r = spawnSync(p.python, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status ?? 1;
}

// Every interpreter is probed before any test runs, so that a missing one fails CI at once.
const wheelPath = torch2Python();
const wheel = wheelPath ? probe(wheelPath) : null;
const noWheel = !wheel ? 'there is no .venv and RAGEN_TORCH2_PYTHON is not set' : lacking(wheel);
if (noWheel && required) refuse(`main lane: ${noWheel}; ${VENV_FIX}`);
let main = noWheel ? null : wheel;
if (!main) {
  console.log(`python tier: no wheel environment (${noWheel}); the main lane takes the first python with torch`);
  const candidates = [...new Set([process.env.RAGEN_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean))];
  const probes = candidates.map(probe);
  main = probes.find((p) => !lacking(p)) ?? null;
  if (!main)
    refuse(
      `no interpreter has both torch and pytest (${probes.map(lacking).join('; ')}): ` +
        '`apt-get install python3-pytest` (with python3-torch, on Debian/Ubuntu) or `pip install torch pytest`, ' +
        'or point RAGEN_PYTHON at an interpreter with both',
    );
}
const oldest = probe(oldestTorchPython());
let oldestRuns = false;
if (lacking(oldest)) refuse(`oldest-torch lane: ${lacking(oldest)}; ${OLDEST_FIX}`);
else if (main && oldest.torch === main.torch)
  refuse(`oldest-torch lane: ${oldest.python}'s torch ${oldest.torch} is the main lane's own; ${OLDEST_FIX}`);
else oldestRuns = true;

// In CI the main lane's transformers/PEFT parity tests must run: RAGEN_REQUIRE_HF=1 turns their skip into a failure.
let status = main ? run(main, 'main lane', main === wheel && required ? { RAGEN_REQUIRE_HF: '1' } : {}) : 0;
if (oldestRuns) status = run(oldest, 'oldest-torch lane') || status;
process.exit(status);
