#!/usr/bin/env node
// `npm run build:prebuild`: the native addon the package ships for this platform and architecture, built fresh from
// native/ (scripts/build-native.mjs: AVX2 + FMA baseline, AVX-512 chosen at run time, no -march=native), stripped,
// into prebuilds/<platform>-<arch>/ragen_native.node with ragen_native.json beside it: the sources' hash (a test
// fails when native/ changes and the prebuild is not made again), the binary's hash and size, the compiler, and the
// newest glibc / libstdc++ symbol versions it needs. The package loads it where there is no build from source
// (src/tensor/native-addon.ts). Run it after changing native/, and commit both files.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildNative, lastLine } from './build-native.mjs';

const root = join(import.meta.dirname, '..');

/** sha256 over native/'s files (sorted by name; each name and its bytes): what the prebuild was built from. */
export function nativeSourcesHash(dir = join(root, 'native')) {
  const h = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    if (!statSync(join(dir, name)).isFile()) continue;
    h.update(`${name}\0`)
      .update(readFileSync(join(dir, name)))
      .update('\0');
  }
  return h.digest('hex');
}

/** The newest versions of `prefix` (GLIBC_, GLIBCXX_) among the binary's dynamic symbols (objdump), or null. */
function newestSymbolVersion(file, prefix) {
  try {
    const out = execFileSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 16 << 20 });
    const versions = [...out.matchAll(new RegExp(`\\(${prefix}_([\\d.]+)\\)`, 'g'))].map((m) => m[1]);
    const key = (v) => v.split('.').map(Number);
    const cmp = (a, b) => {
      const [x, y] = [key(a), key(b)];
      for (let i = 0; i < Math.max(x.length, y.length); i++)
        if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
      return 0;
    };
    return versions.sort(cmp).at(-1) ?? null;
  } catch {
    return null;
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const target = `${process.platform}-${process.arch}`;
  const dir = join(root, 'prebuilds', target);
  const file = join(dir, 'ragen_native.node');
  const sources = nativeSourcesHash();
  const tmp = join(dir, 'ragen_native.new.node'); // .node: require loads it as an addon
  try {
    buildNative(tmp);
  } catch (e) {
    console.error(`build:prebuild: the addon for ${target} was not built (${lastLine(e)})`);
    process.exit(1);
  }
  try {
    execFileSync('strip', ['--strip-unneeded', tmp]); // symbol tables: ~10% of the file, unused at run time
  } catch (e) {
    console.warn(`build:prebuild: not stripped (${lastLine(e)}); the addon is shipped with its symbol tables`);
  }
  // It must load here and have every function before it replaces the shipped one.
  const addon = createRequire(import.meta.url)(tmp);
  if (typeof addon.info !== 'function' || typeof addon.gemm !== 'function') {
    console.error(`build:prebuild: ${file}.new loads but lacks the addon's functions`);
    process.exit(1);
  }
  renameSync(tmp, file);
  const bytes = readFileSync(file);
  let compiler = 'unknown';
  try {
    compiler = execFileSync('c++', ['--version'], { encoding: 'utf8' }).split('\n')[0];
  } catch {
    // left unknown
  }
  const manifest = {
    file: 'ragen_native.node',
    platform: process.platform,
    arch: process.arch,
    sources,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    bytes: bytes.length,
    compiler,
    needs: {
      cpu: 'x86-64 with AVX2 and FMA (AVX-512 paths taken at run time where present)',
      glibc: newestSymbolVersion(file, 'GLIBC'),
      glibcxx: newestSymbolVersion(file, 'GLIBCXX'),
      nodeApi: 'N-API (any Node >= 20)',
    },
  };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'ragen_native.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`build:prebuild: ${file} (${bytes.length} bytes, ${addon.info()})`);
}
