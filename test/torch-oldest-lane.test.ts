// The oldest-torch lane's runner (scripts/test-torch-oldest.mjs, the end of `npm test`): it runs the torch engine's
// torch < 2 paths again on the oldest torch supported (Debian's 1.13), refuses an interpreter without torch by name,
// and skips (saying why) where that torch is the main run's own; in CI (RAGEN_REQUIRE_BACKENDS=1) a skip is a failure.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'ragen-lane-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An executable that answers every call as `python -c 'import torch; print(torch.__version__)'` would. */
function fakePython(name: string, body: string): string {
  const python = join(dir, name);
  writeFileSync(python, `#!/bin/sh\n${body}\n`);
  chmodSync(python, 0o755);
  return python;
}

function lane(env: NodeJS.ProcessEnv) {
  const { RAGEN_PYTHON: _, RAGEN_REQUIRE_BACKENDS: __, ...rest } = process.env;
  return spawnSync('node', ['scripts/test-torch-oldest.mjs'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...rest, ...env },
    timeout: 60_000,
  });
}

describe('scripts/test-torch-oldest.mjs', () => {
  it('stops at once, naming the fix, when RAGEN_OLDEST_TORCH_PYTHON does not import torch', () => {
    const python = fakePython('notorch', `echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1`);
    const r = lane({ RAGEN_OLDEST_TORCH_PYTHON: python });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`RAGEN_OLDEST_TORCH_PYTHON=${python} does not import torch (ModuleNotFoundError`);
    expect(r.stdout).not.toContain('oldest-torch lane: src/'); // no test file started
  });

  it('skips, saying why, when the oldest torch is the one the main run used; in CI that fails', () => {
    const main = fakePython('main', 'echo 2.13.0');
    const old = fakePython('old', 'echo 2.13.0');
    const env = { RAGEN_TORCH2_PYTHON: main, RAGEN_OLDEST_TORCH_PYTHON: old };
    const dev = lane(env);
    expect(dev.status, dev.stderr).toBe(0);
    expect(dev.stdout).toContain(
      `oldest-torch lane: skipped (the main run tested the torch engine on torch 2.13.0 (${main})`,
    );
    const ci = lane({ ...env, RAGEN_REQUIRE_BACKENDS: '1' });
    expect(ci.status).toBe(1);
    expect(ci.stderr).toContain('RAGEN_REQUIRE_BACKENDS=1 makes this a failure');
    expect(ci.stderr).toContain('apt-get install python3-torch');
  });
});
