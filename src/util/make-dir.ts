// Creating a folder a user named, without Node's recursive-mkdir faults: it loops forever under /proc and reports a
// read-only mount as ENOENT. We walk up to the first existing ancestor, refuse pseudo filesystems by name, check that
// ancestor is a writable folder, then create the missing parts one level at a time (each mkdir gives its true errno).
import { accessSync, constants, mkdirSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FileSystemError, fileSystemError } from './fs-errors.js';

/** statfs(2) magic numbers of kernel pseudo filesystems: nothing a user means to write a run or a file into. */
const PSEUDO_FS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0xcafe4a11, 'bpf'],
  [0x42494e4d, 'binfmt_misc'],
  [0x6e736673, 'nsfs'],
  [0x50495045, 'pipefs'],
  [0xf97cff8c, 'selinuxfs'],
  [0x67596969, 'rpc_pipefs'],
  [0x19800202, 'mqueue'],
  [0x958458f6, 'hugetlbfs'],
  [0x6165676c, 'pstore'],
  [0xde5e81e4, 'efivarfs'],
  [0x64646178, 'configfs'],
  [0x1373, 'devfs'],
]);

/** The pseudo filesystem (`proc`, `sysfs`, ...) that holds the existing path `path`, or undefined for a normal one. */
export function pseudoFilesystemOf(path: string): string | undefined {
  try {
    return PSEUDO_FS.get(Number(statfsSync(path).type));
  } catch {
    return undefined; // statfs unsupported here: the mkdir below still reports the real errno
  }
}

/** The deepest existing folder on the way to `path` (`path` itself when it exists). */
export function existingAncestor(path: string): string {
  let p = resolve(path);
  for (;;) {
    try {
      statSync(p);
      return p;
    } catch {
      const up = dirname(p);
      if (up === p) return p;
      p = up;
    }
  }
}

/**
 * Check that folder `path` exists or can be created, without creating anything: not under a pseudo filesystem (proc,
 * sysfs, ...), its deepest existing ancestor a folder we may write to (EROFS names a read-only mount). Errors are
 * FileSystemErrors naming `path`; `action` says what for ("create the run directory"); `setting` names the option
 * that gave the path, for the fix (`logging.runDir`, `--out`). Returns that ancestor.
 */
export function checkCreatable(path: string, action: string, setting?: string): string {
  const target = resolve(path);
  const base = existingAncestor(target);
  const fs = pseudoFilesystemOf(base);
  if (fs !== undefined) {
    const fix = setting ? `point ${setting} at a folder on a disk` : 'choose a folder on a disk';
    throw new FileSystemError(
      `could not ${action}: \`${path}\` is under \`${base}\`, a ${fs} pseudo filesystem of the kernel, which holds no user files; ${fix}.`,
      'EPSEUDOFS',
      path,
    );
  }
  try {
    if (!statSync(base).isDirectory())
      throw Object.assign(new Error(`ENOTDIR: not a directory, '${base}'`), { code: 'ENOTDIR', path: base });
    if (base !== target) accessSync(base, constants.W_OK); // EROFS on a read-only mount, EACCES without permission
  } catch (err) {
    throw withSetting(fileSystemError(err, action, path), setting);
  }
  return base;
}

/**
 * Create folder `path` and its missing parents (like `mkdir -p`) after `checkCreatable`, never hanging; same errors.
 */
export function makeDir(path: string, action: string, setting?: string): void {
  const target = resolve(path);
  const base = checkCreatable(path, action, setting);
  try {
    const missing: string[] = [];
    for (let p = target; p !== base; p = dirname(p)) missing.unshift(p);
    for (const p of missing) mkdirSync(p); // one level at a time: each failure carries its true errno
  } catch (err) {
    throw withSetting(fileSystemError(err, action, path), setting);
  }
}

/**
 * Write `data` to file `path`, its folder made first by `makeDir` (so never under /proc & co., never hanging); errno
 * errors (EROFS, ENOSPC, EACCES, ...) come out as FileSystemErrors naming `path` and `setting`. The one way shipped
 * code writes a file a user named (src/fs-rule.test.ts holds the rest to it).
 */
export function writeFileAt(path: string, data: string | Uint8Array, action: string, setting?: string): void {
  makeDir(dirname(resolve(path)), action, setting);
  try {
    writeFileSync(path, data);
  } catch (err) {
    throw withSetting(fileSystemError(err, action, path), setting);
  }
}

/**
 * `err` with its fix naming `setting` when the fault is the disk's (full, quota, read-only): the generic fix names
 * logging.runsDir.
 */
export function withSetting(err: unknown, setting: string | undefined): unknown {
  if (!(err instanceof FileSystemError) || setting === undefined || !['ENOSPC', 'EDQUOT', 'EROFS'].includes(err.code))
    return err;
  return new FileSystemError(
    err.message.replace(/; [^;]*$/, `; point ${setting} at a writable folder on a disk with free space.`),
    err.code,
    err.path,
  );
}
