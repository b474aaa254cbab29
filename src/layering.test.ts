// The import rules (.dependency-cruiser.cjs: no circles, the library never imports the lab in src/bench, the
// layers of shared/DESIGN.md's module table) hold for the whole tree, and each rule does catch its violation.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

/** Run dependency-cruiser with the project's rules in `cwd`; its text report and exit status. */
function cruise(cwd: string, paths: string[]): { status: number | null; report: string } {
  const r = spawnSync(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'err', ...paths], {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: r.status, report: `${r.stdout}${r.stderr}` };
}

describe('import rules', () => {
  it('hold for src/ and the dashboard client', () => {
    const { status, report } = cruise(ROOT, ['src', 'dashboard-ui/src']);
    expect(report).not.toMatch(/error/);
    expect(status).toBe(0);
  }, 240_000);

  const tmp = mkdtempSync(join(os.tmpdir(), 'ragen-layering-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('report a circle, a library import of the lab, an upward import and a CLI import past the lab entry', () => {
    const files: Record<string, string> = {
      'src/agent/a.ts': "import type { B } from './b.js';\nexport type A = B[];\n",
      'src/agent/b.ts': "import type { A } from './a.js';\nexport interface B { a: A }\n",
      'src/train/uses-lab.ts': "import { lab } from '../bench/lab.js';\nexport const x = lab;\n",
      'src/bench/lab.ts': 'export const lab = 1;\n',
      'src/bench/commands/index.ts': 'export const commands = [];\n',
      'src/algo/up.ts': "import { x } from '../train/uses-lab.js';\nexport const y = x;\n",
      'src/env/up.ts': "import type { A } from '../agent/a.js';\nexport type E = A;\n",
      'src/cli/deep.ts':
        "import { lab } from '../bench/lab.js';\nimport { commands } from '../bench/commands/index.js';\nexport const z = [lab, commands];\n",
      'src/algo/ok.test.ts': "import { x } from '../train/uses-lab.js';\nexport const t = x;\n",
      'tsconfig.json': JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
        include: ['src'],
      }),
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(tmp, path)), { recursive: true });
      writeFileSync(join(tmp, path), text);
    }
    const { status, report } = cruise(tmp, ['src']);
    expect(status).not.toBe(0);
    expect(report).toMatch(/no-circular: src\/agent\/a\.ts/);
    expect(report).toMatch(/library-not-lab: src\/train\/uses-lab\.ts → src\/bench\/lab\.ts/);
    expect(report).toMatch(/layer-algo: src\/algo\/up\.ts → src\/train\/uses-lab\.ts/);
    expect(report).toMatch(/layer-env: src\/env\/up\.ts → src\/agent\/a\.ts/);
    expect(report).toMatch(/cli-lab-entry-only: src\/cli\/deep\.ts → src\/bench\/lab\.ts/);
    // The CLI's one entry into the lab and a test's reach across layers are allowed.
    expect(report).not.toMatch(/src\/cli\/deep\.ts → src\/bench\/commands\/index\.ts/);
    expect(report).not.toMatch(/ok\.test\.ts/);
  }, 240_000);
});
