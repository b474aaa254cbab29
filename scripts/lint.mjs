// `npm run lint`: the formatting and import rules a change must keep. Prettier (.prettierrc.json, 120 columns) over
// the TypeScript and scripts, dependency-cruiser's import rules (.dependency-cruiser.cjs) over src/ and the dashboard,
// and ruff (ruff.toml) over the Python: its lint rules and its formatter. `--fix` rewrites what the formatters can.
// ruff comes from RAGEN_RUFF, ./.venv/bin/ruff or PATH (`python3 -m pip install ruff`; .ci/run installs it).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const fix = process.argv.includes('--fix');
const bin = (pkg, file) => join(ROOT, 'node_modules', pkg, file);
const PRETTIER_GLOBS = [
  'src/**/*.ts',
  'test/**/*.{ts,mjs,js}',
  'scripts/**/*.{ts,mjs}',
  'examples/**/*.{ts,mjs,js}',
  'dashboard-ui/src/**/*.ts',
  'bin/*.js',
  '*.config.ts',
];

function ruffPath() {
  if (process.env.RAGEN_RUFF) return process.env.RAGEN_RUFF;
  const local = join(ROOT, '.venv', 'bin', 'ruff');
  if (existsSync(local)) return local;
  const onPath = spawnSync('ruff', ['--version'], { encoding: 'utf8' });
  return onPath.status === 0 ? 'ruff' : null;
}

const ruff = ruffPath();
const checks = [
  [
    'prettier',
    process.execPath,
    [bin('prettier', 'bin/prettier.cjs'), fix ? '--write' : '--check', '--log-level', 'warn', ...PRETTIER_GLOBS],
  ],
  [
    'dependency-cruiser',
    process.execPath,
    [
      bin('dependency-cruiser', 'bin/dependency-cruise.mjs'),
      '--config',
      '.dependency-cruiser.cjs',
      '--output-type',
      'err',
      'src',
      'dashboard-ui/src',
    ],
  ],
  ['ruff check', ruff, ['check', ...(fix ? ['--fix'] : []), '.']],
  ['ruff format', ruff, ['format', ...(fix ? [] : ['--check']), '.']],
];

let failed = 0;
for (const [name, cmd, args] of checks) {
  if (!cmd) {
    console.error(
      `lint: ${name}: ruff not found; install it (\`python3 -m pip install ruff\` into ./.venv, or set RAGEN_RUFF to its path)`,
    );
    failed++;
    continue;
  }
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
  const ok = r.status === 0;
  console.log(`lint: ${name} ${ok ? 'ok' : 'FAILED'} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  if (!ok) failed++;
}
if (failed) {
  console.error(`lint: ${failed} check(s) failed${fix ? '' : '; `npm run lint -- --fix` rewrites formatting'}`);
  process.exit(1);
}
