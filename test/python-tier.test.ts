// The Python tier's runner (scripts/test-python.mjs, in `npm test`): under RAGEN_REQUIRE_BACKENDS=1 (CI) an interpreter
// that cannot run python/tests fails the run at once with the package to install, before any test starts; the main
// lane (the wheel environment) runs with RAGEN_REQUIRE_HF=1, so its transformers/PEFT tests cannot skip, and the
// oldest-torch lane (Debian's 1.13) without.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

describe('scripts/test-python.mjs', () => {
  it('fails in CI, naming the fix, when the wheel environment has torch but not pytest', () => {
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
      expect(r.stderr).toContain(`main lane: ${python} has torch 2.6.0 but not pytest`);
      expect(r.stderr).toContain('.venv/bin/pip install');
      expect(r.stdout).not.toContain('python/tests with'); // nothing ran
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('in CI, runs the main lane (wheel environment) with RAGEN_REQUIRE_HF=1 and the oldest-torch lane without', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-pytier-'));
    try {
      // Interpreters that pass the probe (project seen, torch, pytest) and, run as pytest, note RAGEN_REQUIRE_HF.
      const fake = (name: string, torch: string) => {
        const python = join(dir, name);
        writeFileSync(
          python,
          `#!/bin/sh\nif [ "$1" = -c ]; then printf 'True\\n${torch}\\n9.0\\n'; exit 0; fi\n` +
            `echo "hf=$RAGEN_REQUIRE_HF" > ${python}.ran\n`,
        );
        chmodSync(python, 0o755);
        return python;
      };
      const main = fake('main', '2.13.0'),
        oldest = fake('oldest', '1.13.0');
      const env = {
        ...process.env,
        RAGEN_TORCH2_PYTHON: main,
        RAGEN_OLDEST_TORCH_PYTHON: oldest,
        RAGEN_REQUIRE_BACKENDS: '1',
      };
      const r = spawnSync('node', ['scripts/test-python.mjs'], { cwd: ROOT, encoding: 'utf8', env, timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(`${main}.ran`, 'utf8').trim()).toBe('hf=1');
      expect(readFileSync(`${oldest}.ran`, 'utf8').trim()).toBe('hf=');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
