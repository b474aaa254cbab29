// Test helper: small tmpfs mounts (read-only, or tiny to fill up) for filesystem-fault tests. Mounting needs root
// (CAP_SYS_ADMIN); where it is refused, `canMount` is false and those tests are skipped with the reason printed.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Mount a tmpfs at a fresh folder; `null` when this process may not mount. */
export function mountTmpfs(options: string): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'ragen-mnt-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  return dir;
}

/** Unmount and remove a folder from `mountTmpfs`. */
export function unmount(dir: string): void {
  spawnSync('umount', [dir]);
  rmSync(dir, { recursive: true, force: true });
}

/** Fill a mounted filesystem until the next write fails with ENOSPC. */
export function fill(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const chunk = Buffer.alloc(4096, 1);
  for (let i = 0; ; i++) {
    try {
      writeFileSync(join(dir, `fill-${i}`), chunk);
    } catch {
      return;
    }
  }
}

/** Whether tmpfs mounts work here (root in a container that allows them). */
export const canMount: boolean = (() => {
  const d = mountTmpfs('size=64k');
  if (d === null) return false;
  unmount(d);
  return true;
})();
