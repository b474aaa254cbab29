// The torch 2 lane's runner (scripts/test-torch2.mjs, the end of `npm test`): it runs the torch engine's torch >= 2 test
// files with the project's wheel environment (.venv) or RAGEN_TORCH2_PYTHON, and refuses an interpreter that is not one.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

describe('scripts/test-torch2.mjs', () => {
  it('stops at once, naming the fix, when RAGEN_TORCH2_PYTHON has a torch older than 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-lane-'));
    try {
      const python = join(dir, 'python3');
      writeFileSync(python, '#!/bin/sh\necho 1.13.0\n');
      chmodSync(python, 0o755);
      const r = spawnSync('node', ['scripts/test-torch2.mjs'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, RAGEN_TORCH2_PYTHON: python },
        timeout: 30_000,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`RAGEN_TORCH2_PYTHON=${python} has torch 1.13.0, not 2.x`);
      expect(r.stdout).not.toContain('torch 2 lane: src/'); // no test file started
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
