// Filesystem faults become one-sentence FileSystemErrors: errno codes and Node's own non-errno codes alike.
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileSystemError, fileSystemError, withFileErrors } from './fs-errors.js';

describe('fileSystemError', () => {
  it('turns ERR_FS_FILE_TOO_LARGE (a whole-file read past 2 GiB, a RangeError with no errno) into one sentence naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fs-errors-'));
    try {
      const path = join(dir, 'big.safetensors');
      writeFileSync(path, '');
      truncateSync(path, 2 ** 31 + 1); // sparse: no disk used
      const err = (() => {
        try {
          withFileErrors('read the optimizer state', path, () => readFileSync(path));
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(FileSystemError);
      expect((err as FileSystemError).code).toBe('ERR_FS_FILE_TOO_LARGE');
      expect((err as Error).message).toMatch(
        /^could not read the optimizer state: `.*big\.safetensors`: the file is over 2 GiB.*\(ERR_FS_FILE_TOO_LARGE\); .*\.$/,
      );
      expect((err as Error).message).not.toContain('\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("maps errno codes with digits and Node's other ERR_FS_ codes, and leaves other errors alone", () => {
    const e2big = Object.assign(new Error('E2BIG: argument list too long'), { code: 'E2BIG' });
    expect(fileSystemError(e2big, 'write', '/x')).toBeInstanceOf(FileSystemError);
    const cp = Object.assign(new Error('Cannot overwrite directory /a with non-directory /b'), {
      code: 'ERR_FS_CP_DIR_TO_NON_DIR',
    });
    const mapped = fileSystemError(cp, 'copy the checkpoint', '/b') as FileSystemError;
    expect(mapped).toBeInstanceOf(FileSystemError);
    expect(mapped.message).toBe(
      'could not copy the checkpoint: `/b`: Cannot overwrite directory /a with non-directory /b (ERR_FS_CP_DIR_TO_NON_DIR); check the path and the disk.',
    );
    const notFs = Object.assign(new TypeError('bad arg'), { code: 'ERR_INVALID_ARG_TYPE' });
    expect(fileSystemError(notFs, 'read', '/x')).toBe(notFs);
  });
});
