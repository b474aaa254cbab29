// bin/ragen.js in a source checkout whose dist/ is not built yet (a fresh clone after `npm install`, which runs no
// build script): the first command builds it with `npm run build`, on stderr, then runs; a failed build says so.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A checkout with bin/ragen.js and a `build` script that writes a CLI printing its arguments (or fails). */
function checkout(build: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ragen-first-run-'));
  dirs.push(dir);
  for (const sub of ['bin', 'scripts', 'node_modules/typescript']) mkdirSync(join(dir, sub), { recursive: true });
  copyFileSync('bin/ragen.js', join(dir, 'bin/ragen.js'));
  writeFileSync(join(dir, 'scripts/build-kernels.mjs'), '');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', scripts: { build } }));
  writeFileSync(
    join(dir, 'scripts/fake-build.mjs'),
    "import { mkdirSync, writeFileSync } from 'node:fs';\n" +
      "mkdirSync('dist/src/cli', { recursive: true });\n" +
      "writeFileSync('dist/src/cli/main.js', 'export async function main(a) { console.log(`ran ${a.join(\" \")}`); return 0; }');\n" +
      "console.log('building');\n",
  );
  return dir;
}

describe('bin/ragen.js in a fresh checkout', () => {
  it('builds once on the first run, keeps the build off stdout, then runs the command', () => {
    const dir = checkout('node scripts/fake-build.mjs');
    const first = spawnSync('node', ['bin/ragen.js', 'envs'], { cwd: dir, encoding: 'utf8' });
    expect(first.status).toBe(0);
    expect(first.stdout).toBe('ran envs\n');
    expect(first.stderr).toMatch(/first run in this checkout: building .*npm run build/);
    expect(first.stderr).toContain('building');
    // built: the second run does not build again
    const second = spawnSync('node', ['bin/ragen.js', 'train'], { cwd: dir, encoding: 'utf8' });
    expect(second.stdout).toBe('ran train\n');
    expect(second.stderr).not.toMatch(/first run/);
  });

  it('says that the build failed and where, and exits 1', () => {
    const dir = checkout('node -e "process.exit(3)"');
    const r = spawnSync('node', ['bin/ragen.js', 'envs'], { cwd: dir, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/`npm run build` failed in .*ragen-first-run-.*fix that and run it again/);
  });

  it('outside a checkout (no build tools), names the fix instead of building', () => {
    const dir = checkout('node scripts/fake-build.mjs');
    rmSync(join(dir, 'node_modules'), { recursive: true });
    const r = spawnSync('node', ['bin/ragen.js', 'envs'], { cwd: dir, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/dist\/src\/cli\/main\.js is missing.*npm install && npm run build/);
    expect(() => execFileSync('test', ['-e', join(dir, 'dist')])).toThrow();
  });
});
