// The packed package, installed as a user installs it: `npm pack`, then `npm install --omit=dev <tarball>` in an empty
// folder outside the repository (registry packages from the local npm cache when it has them), then the `ragen` bin,
// a short training run, the dashboard, `import ... from 'ragen-ts'` and the native backend from the shipped prebuild,
// all run from that folder.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'ragen-pack-'));
const app = join(tmp, 'app');
const bin = join(app, 'node_modules', '.bin', 'ragen');
// No variable pointing back into the repository; npm's own output kept to errors.
const env = { ...process.env, NODE_OPTIONS: '', NODE_PATH: '', npm_config_loglevel: 'error', RAGEN_THREADS: '1' };
let tarball = '';
let installLog = '';

beforeAll(async () => {
  // The tarball packs what `npm run build` made (dist/, build/) and the committed prebuilds/: `prepack` builds it on
  // `npm pack` and `npm publish`; the scripts are skipped here only because CI has just built it.
  expect(existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js')), 'dist/ is missing: run `npm run build` first').toBe(
    true,
  );
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], {
    cwd: ROOT,
    env,
    maxBuffer: 64 << 20,
  });
  tarball = join(tmp, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const installed = await run(
    'npm',
    ['install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', tarball],
    {
      cwd: app,
      env: { ...env, npm_config_loglevel: 'warn' }, // npm's install-scripts notice is a warning
      maxBuffer: 64 << 20,
    },
  );
  installLog = installed.stdout + installed.stderr;
}, 240_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }), 120_000);

describe('the packed package', () => {
  it('carries the built kernels, the dashboard page, models, presets, python and data, and no tests', async () => {
    const list = (await run('tar', ['tzf', tarball], { maxBuffer: 64 << 20 })).stdout
      .split('\n')
      .map((l) => l.replace(/^package\//, ''));
    for (const f of [
      'bin/ragen.js',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'build/kernels/ragen.wasm',
      'build/kernels/ragen-relaxed.wasm',
      'prebuilds/linux-x64/ragen_native.node',
      'prebuilds/linux-x64/ragen_native.json',
      'native/binding.gyp',
      'scripts/build-native.mjs',
      'build/dashboard/index.html',
      'models/ragen-tiny/model.safetensors',
      'models/tokenizer-tiny/tokenizer.json',
      'configs/bandit-ppo.yaml',
      'python/ragen_torch/worker.py',
      'data/metamathqa/train.jsonl',
    ]) {
      expect(list, f).toContain(f);
    }
    expect(list.filter((f) => /\.test\.|^\.ci\/|^src\/|^test\/|__pycache__|^build\/native\//.test(f))).toEqual([]);
  });

  it('installs without a build step: no install-time script, no compiler, no dev dependencies', () => {
    const pkg = join(app, 'node_modules', 'ragen-ts');
    expect(existsSync(join(pkg, 'build', 'kernels', 'ragen.wasm'))).toBe(true);
    // npm's install-time scripts: preinstall, install, postinstall, and prepare for a package not from a registry (a
    // tarball or git): none, so npm 11 has nothing to warn about.
    const scripts = (JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts;
    for (const s of ['preinstall', 'install', 'postinstall', 'prepare']) expect(scripts[s], s).toBeUndefined();
    expect(installLog).not.toMatch(/install-scripts|allowScripts/);
    for (const dev of ['typescript', 'assemblyscript', 'playwright-core', 'vitest'])
      expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
  });

  it('`ragen --help` lists the commands', async () => {
    const r = await run(bin, ['--help'], { cwd: app, env });
    expect(r.stdout).toMatch(/train/);
    expect(r.stdout).toMatch(/dashboard/);
  });

  it('`ragen train --config bandit-ppo` runs 2 steps from a folder outside the repository, on the shipped kernels', async () => {
    const r = await run(
      bin,
      [
        'train',
        '--config',
        'bandit-ppo',
        'trainer.steps=2',
        'trainer.valBeforeTrain=false',
        'trainer.valEvery=0',
        'trainer.checkpointEvery=0',
        'env.train.0.groups=2',
        'env.train.0.groupSize=4',
        'logging.runDir=runs/pack',
      ],
      { cwd: app, env, maxBuffer: 16 << 20, timeout: 170_000 },
    ); // killed, not orphaned, if it overruns
    const metrics = readFileSync(join(app, 'runs', 'pack', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: number });
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    expect(r.stderr).not.toMatch(/slow js reference backend/);
  }, 180_000);

  it('loads the native backend from the shipped prebuild (no build from source there), and its matmul is right', async () => {
    const pkg = join(app, 'node_modules', 'ragen-ts');
    expect(existsSync(join(pkg, 'build', 'native')), 'no build from source in the installed copy').toBe(false);
    writeFileSync(
      join(app, 'native.mjs'),
      [
        "import { tensor as T } from 'ragen-ts';",
        "const backend = T.setBackend('native');",
        'const [M, K, N] = [37, 61, 29];',
        'const a = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i));',
        'const b = Float32Array.from({ length: K * N }, (_, i) => Math.cos(0.7 * i));',
        'const y = T.matmul(T.tensor(a, [M, K]), T.tensor(b, [K, N])).toFloat32Array();',
        'let err = 0;',
        'for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {',
        '  let s = 0;',
        '  for (let k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];',
        '  err = Math.max(err, Math.abs(y[i * N + j] - s));',
        '}',
        'console.log(JSON.stringify({ backend: backend.name, err }));',
      ].join('\n'),
    );
    const r = await run(process.execPath, ['native.mjs'], { cwd: app, env });
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { backend: string; err: number };
    expect(out.backend).toBe('native');
    expect(out.err).toBeLessThan(1e-3); // sums of 61 products of magnitude <= 1, in float32
  });

  it('`ragen dashboard` answers its page over HTTP', async () => {
    const child = spawn(bin, ['dashboard', 'runs'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((ok, fail) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c;
          const m = /http:\/\/127\.0\.0\.1:\d+\/?/.exec(out);
          if (m) ok(m[0]);
        });
        child.stderr.on('data', (c: Buffer) => (out += c));
        child.on('exit', (code) => fail(new Error(`ragen dashboard exited (${code}): ${out}`)));
      });
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/<html/i);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it("`import { train, loadConfig } from 'ragen-ts'` works in a user's script", async () => {
    writeFileSync(
      join(app, 'use.mjs'),
      [
        "import { train, loadConfig } from 'ragen-ts';",
        "const config = loadConfig({ config: 'bandit-ppo', overrides: ['trainer.steps=1'] });",
        'console.log(JSON.stringify({ train: typeof train, steps: config.trainer.steps, model: config.model.path }));',
      ].join('\n'),
    );
    const r = await run(process.execPath, ['use.mjs'], { cwd: app, env });
    expect(JSON.parse(r.stdout)).toEqual({ train: 'function', steps: 1, model: 'ragen-tiny' });
    expect(readdirSync(app)).toContain('node_modules');
  });

  it("`from 'ragen-ts'` also resolves inside the repository (self-reference through `exports`)", async () => {
    const r = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('ragen-ts'); console.log(typeof m.train, typeof m.loadConfig)",
      ],
      { cwd: ROOT, env },
    );
    expect(r.stdout.trim()).toBe('function function');
  });
});
