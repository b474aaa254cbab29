// docs/architecture.md's module picture is what scripts/architecture.mjs renders from the code today, and a page that
// differs from it (an import added or dropped without the page following) fails the check.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'architecture.mjs');
const dir = mkdtempSync(join(tmpdir(), 'ragen-architecture-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(doc?: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [SCRIPT, '--check', ...(doc ? ['--doc', doc] : [])], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

it('docs/architecture.md matches the module graph of src/', () => {
  const { status, output } = check();
  expect(output).toMatch(/matches the code/);
  expect(status).toBe(0);
}, 240_000);

it('a page missing one of the imports it should draw fails the check, naming the fix', () => {
  const page = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const stale = page.replace('  eval --> train\n', '');
  expect(stale).not.toBe(page); // the edge is on the page to remove
  const doc = join(dir, 'architecture.md');
  writeFileSync(doc, stale);
  const { status, output } = check(doc);
  expect(output).toMatch(/differs from the code: run `node scripts\/architecture\.mjs`/);
  expect(status).toBe(1);
}, 240_000);
