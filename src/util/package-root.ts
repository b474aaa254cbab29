// Where the ragen-ts package lies (build/, models/, package.json), from this file in src/ or dist/src/, and its version.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The ragen-ts package folder, found upward from this file. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const pj = join(dir, 'package.json');
    if (existsSync(pj) && (JSON.parse(readFileSync(pj, 'utf8')) as { name?: string }).name === 'ragen-ts') return dir;
    dir = dirname(dir);
  }
  throw new Error(`cannot find the ragen-ts package folder above ${fileURLToPath(import.meta.url)}`);
}

/** The package's version (package.json). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
