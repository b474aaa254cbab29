// The Python tier's runner (scripts/test-python.mjs, in `npm test`): under RAGEN_REQUIRE_BACKENDS=1 (CI) an interpreter
// that cannot run python/tests fails the run at once with the package to install, before any test starts.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

describe('scripts/test-python.mjs', () => {
  it('fails in CI, naming python3-pytest, when the torch 2 interpreter has torch but not pytest', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-pytier-'));
    try {
      // The probe prints: sees the project, torch's version, then pytest's (here: import fails).
      const python = join(dir, 'python3');
      const noPytest = `echo "ModuleNotFoundError: No module named 'pytest'" >&2`;
      writeFileSync(python, `#!/bin/sh\necho True\necho 2.6.0\n${noPytest}\nexit 1\n`);
      chmodSync(python, 0o755);
      const env = { ...process.env, RAGEN_TORCH2_PYTHON: python, RAGEN_REQUIRE_BACKENDS: '1' };
      const r = spawnSync('node', ['scripts/test-python.mjs'], { cwd: ROOT, encoding: 'utf8', env, timeout: 120_000 });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`RAGEN_TORCH2_PYTHON=${python} has torch 2.6.0 but not pytest`);
      expect(r.stderr).toContain('installs python3-torch and python3-pytest');
      expect(r.stdout).not.toContain('python tier: python/tests with'); // nothing ran
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
