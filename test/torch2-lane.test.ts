// The torch 2 lane's set-up (scripts/torch2-chroot.sh, scripts/test-torch2.mjs). A clone deleted and made again at
// the same path (CI on a machine it has used before) leaves the chroot's bind showing the old, empty folder: the
// script binds it again, and the lane says so once instead of failing every test with "No module named ragen_torch".
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

describe('scripts/test-torch2.mjs', () => {
  it('stops at once, naming the fix, when the interpreter does not see the worker package', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-lane-'));
    try {
      // An interpreter with torch 2 whose view of the project is empty, as a chroot's with a stale bind is.
      const python = join(dir, 'python3');
      writeFileSync(python, `#!/bin/sh\ncase "$2" in *__version__*) echo 2.6.0 ;; *) echo "ModuleNotFoundError: No module named 'ragen_torch'" >&2; exit 1 ;; esac\n`);
      chmodSync(python, 0o755);
      const r = spawnSync('node', ['scripts/test-torch2.mjs'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, RAGEN_TORCH2_PYTHON: python }, timeout: 30_000 });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`does not see this project's python/ragen_torch from ${ROOT}`);
      expect(r.stderr).toContain('sudo sh scripts/torch2-chroot.sh');
      expect(r.stdout).not.toContain('torch 2 lane: src/'); // no test file started
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Needs the chroot itself (RAGEN_TORCH2_PYTHON from torch2-chroot.sh, as .ci/run sets it) and root for its mounts.
const wrapper = process.env.RAGEN_TORCH2_PYTHON;
const chroot = wrapper ? dirname(wrapper) : '';
const canChroot = !!wrapper && existsSync(join(chroot, 'usr', 'bin', 'python3')) && process.getuid?.() === 0;

describe.runIf(canChroot)('scripts/torch2-chroot.sh', () => {
  // Outside /tmp, $TMPDIR and this project, which the chroot shows already: the script must bind it itself.
  let project = '';
  afterAll(() => {
    if (!project) return;
    spawnSync('umount', ['-l', join(chroot, project)]);
    rmSync(dirname(project), { recursive: true, force: true });
  });

  function clone(marker: string): void {
    rmSync(project, { recursive: true, force: true });
    mkdirSync(join(project, 'python', 'ragen_torch'), { recursive: true });
    cpSync(join(ROOT, 'scripts', 'torch2-chroot.sh'), join(project, 'scripts', 'torch2-chroot.sh'));
    writeFileSync(join(project, 'python', 'ragen_torch', '__init__.py'), '');
    writeFileSync(join(project, 'marker'), marker);
  }
  const setUp = () => spawnSync('sh', [join(project, 'scripts', 'torch2-chroot.sh'), chroot], { encoding: 'utf8', timeout: 300_000 });
  const seen = () => spawnSync(wrapper!, ['-c', 'print(open("marker").read())'], { cwd: project, encoding: 'utf8', timeout: 60_000 });

  it('binds again a clone deleted and made again at the same path', () => {
    project = join(mkdtempSync('/var/tmp/ragen-chroot-'), 'clone');
    clone('first');
    const first = setUp();
    expect(first.status, first.stderr).toBe(0);
    expect(seen().stdout.trim()).toBe('first');

    clone('second'); // the old bind now shows a deleted folder
    const second = setUp();
    expect(second.status, second.stderr).toBe(0);
    const r = seen();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('second');
  }, 600_000);
});
