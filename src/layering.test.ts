// The import rules (.dependency-cruiser.cjs: no circles, the library never imports the lab in src/bench, the
// layers drawn in docs/architecture.md) hold for the whole tree, and each rule does catch its violation.
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

  it('report a circle, a library import of the lab, an upward import, a CLI import past the lab entry, a lab import of the CLI, a config import of the environments and an import past an index', () => {
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
      'src/bench/uses-cli.ts': "import { cli } from '../cli/cli.js';\nexport const w = cli;\n",
      'src/cli/cli.ts': 'export const cli = 1;\n',
      'src/envs/index.ts': 'export const envs = 1;\n',
      'src/config/pulls-envs.ts': "import { envs } from '../envs/index.js';\nexport const v = envs;\n",
      'src/util/index.ts': "export { u } from './inner.js';\n",
      'src/util/inner.ts': 'export const u = 1;\n',
      'src/util/testing.ts': 'export const helper = 1;\n',
      'src/model/deep.ts':
        "import { u } from '../util/inner.js';\nimport { u as v } from '../util/index.js';\nexport const m = [u, v];\n",
      'src/model/helped.test.ts': "import { u } from '../util/inner.js';\nexport const h = u;\n",
      'src/train/helped.ts': "import { helper } from '../util/testing.js';\nexport const k = helper;\n",
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
    expect(report).toMatch(/lab-not-cli: src\/bench\/uses-cli\.ts → src\/cli\/cli\.ts/);
    expect(report).toMatch(/layer-config: src\/config\/pulls-envs\.ts → src\/envs\/index\.ts/);
    expect(report).toMatch(/through-index: src\/model\/deep\.ts → src\/util\/inner\.ts/);
    // Through the index, a folder's own files, a test's deep import and a test helper are allowed.
    expect(report).not.toMatch(/→ src\/util\/index\.ts/);
    expect(report).not.toMatch(/src\/util\/index\.ts → /);
    expect(report).not.toMatch(/helped/);
    // The CLI's one entry into the lab and a test's reach across layers are allowed.
    expect(report).not.toMatch(/src\/cli\/deep\.ts → src\/bench\/commands\/index\.ts/);
    expect(report).not.toMatch(/ok\.test\.ts/);
  }, 240_000);
});
