import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileSystemError } from './fs-errors.js';
import { checkCreatable, makeDir } from './make-dir.js';
import { canMount, mountTmpfs, unmount } from './mounts-testing.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-mkdir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function errorOf(fn: () => void): FileSystemError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(FileSystemError);
    return err as FileSystemError;
  }
  throw new Error('expected a FileSystemError');
}

describe('makeDir', () => {
  it('creates missing parents like mkdir -p, and accepts a folder that exists', () => {
    const deep = join(root, 'a', 'b', 'c');
    makeDir(deep, 'create it');
    expect(statSync(deep).isDirectory()).toBe(true);
    makeDir(deep, 'create it');
  });

  it('refuses paths under /proc and /sys at once, naming the pseudo filesystem and the setting', () => {
    const t0 = performance.now();
    const proc = errorOf(() => makeDir('/proc/ragen-x/y', 'create the run directory', 'logging.runDir'));
    expect(proc.message).toBe(
      'could not create the run directory: `/proc/ragen-x/y` is under `/proc`, a proc pseudo filesystem of the kernel, which holds no user files; point logging.runDir at a folder on a disk.',
    );
    expect(errorOf(() => checkCreatable('/sys/ragen-x', 'create it')).message).toMatch(
      /under `\/sys`, a sysfs pseudo filesystem/,
    );
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('says ENOTDIR when a part of the path is a file', () => {
    const file = join(root, 'file');
    writeFileSync(file, 'x');
    expect(errorOf(() => makeDir(join(file, 'run'), 'create it')).code).toBe('ENOTDIR');
  });

  it.runIf(canMount)(
    "names a read-only mount (EROFS), not ENOENT as Node's recursive mkdir does (needs tmpfs mounts)",
    () => {
      const ro = mountTmpfs('ro,size=64k')!;
      try {
        for (const path of [join(ro, 'run'), join(ro, 'a', 'b', 'run')]) {
          const err = errorOf(() => makeDir(path, 'create the run directory', 'logging.runDir'));
          expect(err.code).toBe('EROFS');
          expect(err.message).toBe(
            `could not create the run directory: \`${ro}\` (for \`${path}\`): the filesystem is read-only (EROFS); point logging.runDir at a writable folder on a disk with free space.`,
          );
        }
      } finally {
        unmount(ro);
      }
    },
  );
});
