#!/usr/bin/env node
// Builds the tensor kernels at install time (`npm run build`, which `prepare` runs):
//  1. assembly/ -> build/kernels/ragen.wasm (SIMD, shared memory), ragen-relaxed.wasm (+ relaxed-SIMD FMA) and
//     ragen-single.wasm (SIMD, plain memory, for browsers) with AssemblyScript;
//  2. native/ -> build/native/ragen_native.node with node-gyp (optional: one log line and move on if it fails).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const out = join(root, 'build', 'kernels');
mkdirSync(out, { recursive: true });

function asc(file, extra, shared = true) {
  const ascBin = join(dirname(require.resolve('assemblyscript/package.json')), 'bin', 'asc.js');
  const memory = shared ? ['--enable', 'threads', '--sharedMemory'] : [];
  execFileSync(process.execPath, [ascBin, join(root, 'assembly', 'index.ts'), '-O3', '--runtime', 'stub', '--noAssert',
    '--enable', 'simd', ...memory, ...extra, '--importMemory', '--initialMemory', '1', '--maximumMemory', '65536',
    '-o', join(out, `${file}.tmp`)], { stdio: 'inherit', cwd: root });
  renameSync(join(out, `${file}.tmp`), join(out, file)); // atomic: a process loading the kernels never sees half a file
}

let haveAsc = true;
try {
  require.resolve('assemblyscript/package.json');
} catch {
  haveAsc = false;
}
if (haveAsc) {
  asc('ragen.wasm', []);
  asc('ragen-relaxed.wasm', ['--enable', 'relaxed-simd']);
  asc('ragen-single.wasm', [], false); // browsers without cross-origin isolation: one thread, plain memory
} else if (!existsSync(join(out, 'ragen.wasm'))) {
  console.log('build-kernels: assemblyscript is not installed (dev dependency) and build/kernels/ragen.wasm is missing; the wasm backend is unavailable');
}

// Optional native addon.
if (process.env.RAGEN_NO_NATIVE === '1') process.exit(0);
try {
  const npmDir = dirname(dirname(require.resolve('npm/package.json', { paths: [dirname(process.execPath), '/usr/lib/node_modules', '/usr/share/nodejs', '/usr/local/lib/node_modules'] })));
  const gyp = join(npmDir, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const nativeDir = join(root, 'native');
  const nodedir = process.env.npm_config_nodedir || (existsSync('/usr/include/node/node_api.h') ? '/usr' : undefined);
  const args = [gyp, 'rebuild', '--silent', ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
  execFileSync(process.execPath, args, { cwd: nativeDir, stdio: ['ignore', 'ignore', 'pipe'] });
  const built = join(nativeDir, 'build', 'Release', 'ragen_native.node');
  mkdirSync(join(root, 'build', 'native'), { recursive: true });
  const dest = join(root, 'build', 'native', 'ragen_native.node');
  copyFileSync(built, `${dest}.tmp`);
  renameSync(`${dest}.tmp`, dest);
  console.log('build-kernels: native backend built');
} catch (e) {
  const msg = String(e?.stderr ?? e?.message ?? e).split('\n').filter(Boolean).slice(-1)[0] ?? '';
  console.log(`build-kernels: native backend not built (${msg.slice(0, 200)}); the wasm backend will be used`);
} finally {
  rmSync(join(root, 'native', 'build'), { recursive: true, force: true });
}
