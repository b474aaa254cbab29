// The torch 2 lane's set-up (scripts/torch2-chroot.sh, scripts/test-torch2.mjs). A clone deleted and made again at
// the same path (CI on a machine it has used before) leaves the chroot's bind showing the old, empty folder: the
// script binds it again, and the lane says so once instead of failing every test with "No module named ragen_torch".
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
      writeFileSync(
        python,
        `#!/bin/sh\ncase "$2" in *__version__*) echo 2.6.0 ;; *) echo "ModuleNotFoundError: No module named 'ragen_torch'" >&2; exit 1 ;; esac\n`,
      );
      chmodSync(python, 0o755);
      const r = spawnSync('node', ['scripts/test-torch2.mjs'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, RAGEN_TORCH2_PYTHON: python },
        timeout: 30_000,
      });
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
  // Folders outside /tmp, $TMPDIR and this project, which the chroot shows already: the script must bind them itself.
  const bases: string[] = [];
  afterAll(() => {
    for (const base of bases) {
      for (const name of ['clone', 'link']) spawnSync('umount', ['-l', join(chroot, base, name)]);
      rmSync(join(chroot, base), { recursive: true, force: true }); // the mount points made inside the chroot
      rmSync(base, { recursive: true, force: true });
    }
  });
  function newBase(): string {
    bases.push(mkdtempSync('/var/tmp/ragen-chroot-'));
    return bases.at(-1)!;
  }

  /** A stand-in clone at `project`: the script, the worker package's marker file and a `marker` naming this copy. */
  function clone(project: string, marker: string): void {
    rmSync(project, { recursive: true, force: true });
    mkdirSync(join(project, 'python', 'ragen_torch'), { recursive: true });
    cpSync(join(ROOT, 'scripts', 'torch2-chroot.sh'), join(project, 'scripts', 'torch2-chroot.sh'));
    writeFileSync(join(project, 'python', 'ragen_torch', '__init__.py'), '');
    writeFileSync(join(project, 'marker'), marker);
  }
  const setUp = (project: string) =>
    spawnSync('sh', [join(project, 'scripts', 'torch2-chroot.sh'), chroot], { encoding: 'utf8', timeout: 300_000 });
  /** The chroot's python3 reading `marker` in `cwd`, from a shell whose PWD is `cwd` as spelled. */
  const seen = (cwd: string) =>
    spawnSync(wrapper!, ['-c', 'print(open("marker").read())'], {
      cwd,
      env: { ...process.env, PWD: cwd },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('binds again a clone deleted and made again at the same path', () => {
    const project = join(newBase(), 'clone');
    clone(project, 'first');
    const first = setUp(project);
    expect(first.status, first.stderr).toBe(0);
    expect(seen(project).stdout.trim()).toBe('first');

    clone(project, 'second'); // the old bind now shows a deleted folder
    const second = setUp(project);
    expect(second.status, second.stderr).toBe(0);
    const r = seen(project);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('second');
  }, 600_000);

  it('binds a clone reached through a symbolic link by its real path, which is the one Node runs the worker in', () => {
    const base = newBase();
    const project = join(base, 'clone');
    clone(project, 'linked');
    const link = join(base, 'link');
    symlinkSync(project, link);
    const r = setUp(link);
    expect(r.status, r.stderr).toBe(0);
    for (const cwd of [project, link]) {
      const s = seen(cwd);
      expect(s.status, `${cwd}: ${s.stderr}`).toBe(0);
      expect(s.stdout.trim()).toBe('linked');
    }
  }, 600_000);
});
