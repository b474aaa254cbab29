// docs/library.md runs as written: its files (each code block whose first line names one) are written into a folder
// outside the repository where `ragen-ts` and `zod` resolve as installed packages, and `node train-lamp.mjs` trains.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'ragen-library-doc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The page's code blocks that start with a comment naming a file: `// lamp.mjs: ...` or `# lamp-ppo.yaml: ...`. */
function pageFiles(markdown: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const m of markdown.matchAll(/```\w+\n([\s\S]*?)```/g)) {
    const name = /^(?:\/\/|#) ([\w.-]+\.(?:mjs|yaml)):/.exec(m[1]!)?.[1];
    if (name) files.set(name, m[1]!);
  }
  return files;
}

it('docs/library.md: the environment, its preset and the training script run from a project outside the repository', async () => {
  const files = pageFiles(readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8'));
  expect([...files.keys()].sort()).toEqual(['lamp-ppo.yaml', 'lamp.mjs', 'train-lamp.mjs']);
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'ragen-ts'), 'dir'); // as `npm install <tarball>` would place it
  symlinkSync(join(ROOT, 'node_modules', 'zod'), join(dir, 'node_modules', 'zod'), 'dir');
  const r = await promisify(execFile)(process.execPath, ['train-lamp.mjs'], {
    cwd: dir,
    env: { ...process.env, RAGEN_THREADS: '1' },
  });
  expect(r.stdout).toMatch(/2 steps in .*runs\/lamp/);
  expect(r.stdout).toMatch(/Lamp/); // the summary table names the val tag
  const metrics = readFileSync(join(dir, 'runs', 'lamp', 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { step: number });
  expect(metrics.filter((m) => m.step > 0).map((m) => m.step)).toEqual([1, 2]);
}, 180_000);
