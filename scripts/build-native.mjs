#!/usr/bin/env node
// Builds the native addon from native/ with node-gyp (npm's own copy) into build/native/ragen_native.node, or into the
// file given as the first argument. `npm run build:native` runs it, in the repository or in an installed package
// (which ships native/ for this: the fallback where no prebuild fits the platform). The addon is portable: AVX2 + FMA
// baseline, AVX-512 paths chosen at run time (native/isa.h), libstdc++ linked in (native/binding.gyp), no -march=native.
// Exits 1 with the compiler's last line when the build fails.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Build the addon into `dest` (atomically: a process loading it never sees half a file). Throws on failure. */
export function buildNative(dest = join(root, 'build', 'native', 'ragen_native.node')) {
  const require = createRequire(import.meta.url);
  const npmDir = dirname(
    dirname(
      require.resolve('npm/package.json', {
        paths: [dirname(process.execPath), '/usr/lib/node_modules', '/usr/share/nodejs', '/usr/local/lib/node_modules'],
      }),
    ),
  );
  const gyp = join(npmDir, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const nativeDir = join(root, 'native');
  const nodedir = process.env.npm_config_nodedir || (existsSync('/usr/include/node/node_api.h') ? '/usr' : undefined);
  const args = [gyp, 'rebuild', '--silent', ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
  try {
    execFileSync(process.execPath, args, { cwd: nativeDir, stdio: ['ignore', 'ignore', 'pipe'] });
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(join(nativeDir, 'build', 'Release', 'ragen_native.node'), `${dest}.tmp`);
    renameSync(`${dest}.tmp`, dest);
  } finally {
    rmSync(join(nativeDir, 'build'), { recursive: true, force: true });
  }
  return dest;
}

/** The last line of a failed build's output, for a one-line message. */
export function lastLine(e) {
  return (
    String(e?.stderr ?? e?.message ?? e)
      .split('\n')
      .filter(Boolean)
      .slice(-1)[0] ?? ''
  ).slice(0, 300);
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  try {
    const dest = buildNative(process.argv[2] ? resolve(process.argv[2]) : undefined);
    console.log(`build-native: built ${dest}`);
  } catch (e) {
    console.error(
      `build-native: the native addon was not built (${lastLine(e)}); it needs g++ (>= 9), make and python3 ` +
        '(node-gyp); without it ragen uses the wasm backend',
    );
    process.exit(1);
  }
}
