// Filesystem faults as sentences: Node's errno errors (ENOSPC, EROFS, EACCES, ...) become a FileSystemError that names
// the path, what was being done, and the fix, so the CLI prints one line (exit 2) instead of a stack.
import { RagenError } from './errors.js';

/** A file or folder could not be read or written; `path` and `code` (the errno name) say which and why. */
export class FileSystemError extends RagenError {
  constructor(
    message: string,
    readonly code: string,
    readonly path: string,
  ) {
    super(message);
  }
}

const REASONS: Record<string, [reason: string, fix: string]> = {
  ENOSPC: ['the disk is full', 'free space on it, or point logging.runsDir at another disk'],
  EDQUOT: ['the disk quota is used up', 'free space, or point logging.runsDir at another disk'],
  EROFS: ['the filesystem is read-only', 'choose a writable folder (logging.runsDir / logging.runDir)'],
  EACCES: ['permission is denied', 'choose a folder you may write to, or change its permissions'],
  EPERM: ['the operation is not permitted there', 'choose a folder you may write to'],
  ENOENT: ['it (or a folder above it) does not exist', 'check the path'],
  EEXIST: ['a file of that name is in the way', 'remove the file or choose another path'],
  ENOTDIR: ['a part of the path is a file, not a folder', 'check the path'],
  EISDIR: ['it is a folder where a file is needed', 'check the path'],
  EMFILE: ['too many files are open', 'raise the open-file limit (ulimit -n)'],
  EIO: ['the device reported an I/O error', 'check the disk'],
  // Node's own codes (not errno) on the same paths: a whole-file read past 2 GiB, a string or buffer past V8's limits.
  ERR_FS_FILE_TOO_LARGE: [
    'the file is over 2 GiB, more than Node reads into one buffer',
    'read it in pieces (this is a bug in ragen-ts: please report it)',
  ],
  ERR_STRING_TOO_LONG: ['the file is too large to read as one string', 'check that it is the file you meant'],
  ERR_BUFFER_TOO_LARGE: [
    'the data is larger than the largest buffer Node can make',
    'check that it is the file you meant',
  ],
  ERR_FS_EISDIR: ['it is a folder where a file is needed', 'check the path'],
};

/**
 * True for the filesystem errors Node throws: errno errors (`err.code` like 'ENOSPC', 'E2BIG') and Node's own
 * `ERR_FS_*` codes plus the size limits above (`ERR_FS_FILE_TOO_LARGE` is a RangeError with no errno).
 */
export function isErrnoError(err: unknown): err is NodeJS.ErrnoException {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  return (
    typeof code === 'string' &&
    (/^E[A-Z0-9]+$/.test(code) ||
      /^ERR_FS_[A-Z_]+$/.test(code) ||
      code === 'ERR_STRING_TOO_LONG' ||
      code === 'ERR_BUFFER_TOO_LARGE')
  );
}

/**
 * `err` as a FileSystemError when it is an errno error (else `err` unchanged). `path` names the file when the error
 * has none (ENOSPC from a write carries no path); `action` says what was being done ("write the checkpoint").
 */
export function fileSystemError(err: unknown, action: string, path?: string): unknown {
  if (err instanceof FileSystemError || !isErrnoError(err)) return err;
  const where = err.path ?? path ?? '?';
  const [reason, fix] = REASONS[err.code!] ?? [err.message, 'check the path and the disk'];
  const at = path && err.path && path !== err.path ? ` (for \`${path}\`)` : '';
  return new FileSystemError(
    `could not ${action}: \`${where}\`${at}: ${reason} (${err.code}); ${fix}.`,
    err.code!,
    where,
  );
}

/** Run `fn`; an errno error it throws comes out as a FileSystemError about `path`. */
export function withFileErrors<T>(action: string, path: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw fileSystemError(err, action, path);
  }
}
