// The unit tier (`npm run test:unit`, vitest.unit.config.ts): its guard refuses process starts and server listens
// and puts them back, and its file list names only what exists, so a moved folder cannot silently empty it.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import unit from '../vitest.unit.config.js';
import { forbidProcessesAndServers } from './unit-tier.js';

const ROOT = join(import.meta.dirname, '..');

describe('item 4: the unit tier guard', () => {
  it('refuses a process start through a named import and a server listen, naming the call and the fix', () => {
    const refused: string[] = [];
    const undo = forbidProcessesAndServers(refused);
    try {
      expect(() => spawn('python3', ['-c', 'pass'])).toThrow(
        /child_process\.spawn\("python3"\) was refused: .*vitest\.unit\.config\.ts/,
      );
      expect(() => execFileSync('true')).toThrow(/child_process\.execFileSync\("true"\) was refused/);
      expect(() => http.createServer().listen(0, '127.0.0.1')).toThrow(
        /a server's listen\(0, "127\.0\.0\.1"\) was refused/,
      );
    } finally {
      undo();
    }
    expect(refused).toEqual([
      'child_process.spawn("python3")',
      'child_process.execFileSync("true")',
      `a server's listen(0, "127.0.0.1")`,
    ]);
  });

  it('records a refusal that the code under test catches, so the setup file can fail the test', () => {
    const refused: string[] = [];
    const undo = forbidProcessesAndServers(refused);
    try {
      try {
        spawnSync('ls');
      } catch {
        // code under test that swallows the error
      }
    } finally {
      undo();
    }
    expect(refused).toEqual(['child_process.spawnSync("ls")']);
  });

  it('puts the real functions back', async () => {
    forbidProcessesAndServers([])();
    expect(spawnSync(process.execPath, ['-e', 'process.exit(3)']).status).toBe(3);
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('item 4: vitest.unit.config.ts', () => {
  const test = unit.test!;
  /** A pattern's files: a folder glob `dir/**\/*.test.ts` or `dir/**` must hold a test file; a path must exist. */
  const exists = (pattern: string): boolean => {
    const dir = /^(.*)\/\*\*(\/\*\.test\.ts)?$/.exec(pattern)?.[1];
    if (dir === undefined) return existsSync(join(ROOT, pattern));
    if (!existsSync(join(ROOT, dir))) return false;
    return readdirSync(join(ROOT, dir), { recursive: true }).some((f) => String(f).endsWith('.test.ts'));
  };

  it('names only folders and files that exist, in include and exclude', () => {
    const own = (test.exclude ?? []).filter((p) => p.startsWith('src/'));
    const missing = [...(test.include ?? []), ...own].filter((p) => !exists(p));
    expect(missing, 'patterns of vitest.unit.config.ts that match nothing: move them where the files went').toEqual([]);
    expect(own.length).toBeGreaterThan(0);
  });

  it('installs the guard and tells gated helpers they run in the unit tier', () => {
    expect(test.setupFiles).toEqual(['test/unit-setup.ts']);
    expect(existsSync(join(ROOT, 'test/unit-setup.ts'))).toBe(true);
    expect(test.env).toMatchObject({ RAGEN_UNIT_TIER: '1' });
  });
});
