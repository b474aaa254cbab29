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
};

/** True for Node's errno errors (`err.code` like 'ENOSPC'). */
export function isErrnoError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && /^E[A-Z]+$/.test((err as NodeJS.ErrnoException).code!);
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
  return new FileSystemError(`could not ${action}: \`${where}\`${at}: ${reason} (${err.code}); ${fix}.`, err.code!, where);
}

/** Run `fn`; an errno error it throws comes out as a FileSystemError about `path`. */
export function withFileErrors<T>(action: string, path: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw fileSystemError(err, action, path);
  }
}
