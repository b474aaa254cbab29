// The bubblewrap command line: what the sandboxed program sees of the machine (only /usr, read-only) and
// which namespaces it gets (all new: user, pid, net, ipc, uts, mount, cgroup).
import { accessSync, constants, lstatSync, readlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether `path` is an executable file. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The absolute path of `name` on PATH, or undefined. */
export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not in this directory
    }
  }
  for (const p of [`/usr/bin/${name}`, `/bin/${name}`]) {
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not installed there
    }
  }
  return undefined;
}

/** `/bin`, `/lib`, ... as on the host: symlinks into /usr (merged /usr) are recreated, real dirs bound read-only. */
function rootLinks(): string[] {
  const args: string[] = [];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
    } catch {
      // absent on this machine
    }
  }
  return args;
}

/**
 * Arguments for `bwrap` before the command: every namespace unshared (no network: only a down
 * loopback), uid/gid 65534 (nobody) without capabilities, /usr and the library dirs read-only, a fresh
 * /proc (own pid namespace) and minimal /dev, a tmpfs scratch dir at /sandbox (the working directory)
 * of `scratchMB` MiB, the root remounted read-only, killed with its parent, in a new session (no
 * TIOCSTI on the host terminal). No /etc, /home, /tmp, /work or /root: the host's files are not there.
 */
export function bwrapArgs(scratchMB: number): string[] {
  return [
    '--unshare-all',
    '--unshare-user',
    '--uid',
    '65534',
    '--gid',
    '65534',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/usr',
    '/usr',
    ...rootLinks(),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(scratchMB * 1024 * 1024),
    '--tmpfs',
    '/sandbox',
    '--chdir',
    '/sandbox',
    '--remount-ro',
    '/',
    '--die-with-parent',
    '--new-session',
  ];
}
