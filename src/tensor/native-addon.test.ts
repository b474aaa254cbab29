// Where the native addon is found: a build from source first, else the package's prebuild for this platform; a file
// that does not load is passed over, and when none is taken the error names each file tried and the fix.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon, nativeAddonCandidates, prebuildDir } from './native-addon.js';
import { packageRoot } from './node-kernels.js';

const shipped = join(prebuildDir(packageRoot(), 'linux', 'x64'), 'ragen_native.node');
const tmp = mkdtempSync(join(tmpdir(), 'ragen-addon-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A package root holding `files` (path -> the shipped addon's bytes, or text). */
function root(name: string, files: Record<string, 'addon' | string>): string {
  const dir = join(tmp, name);
  for (const [path, what] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    if (what === 'addon') copyFileSync(shipped, join(dir, path));
    else writeFileSync(join(dir, path), what);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('loadNativeAddon', () => {
  it('tries build/native, then prebuilds/<platform>-<arch>', () => {
    expect(nativeAddonCandidates('/pkg', 'linux', 'arm64')).toEqual([
      '/pkg/build/native/ragen_native.node',
      '/pkg/prebuilds/linux-arm64/ragen_native.node',
    ]);
  });

  it('names both places and the build-from-source command when neither has an addon', () => {
    const dir = root('none', { 'native/binding.gyp': '{}' });
    expect(() => loadNativeAddon(dir)).toThrow(
      `no native addon: neither a build from source (${dir}/build/native/ragen_native.node) nor a prebuild for ${process.platform}-${process.arch} (${dir}/prebuilds/${process.platform}-${process.arch}/ragen_native.node); \`npm run build:native\` builds it from native/ (needs g++ and make)`,
    );
  });

  describe.runIf(process.platform === 'linux' && process.arch === 'x64')('on linux-x64', () => {
    it('takes the prebuild where there is no build from source', () => {
      const dir = root('prebuilt', { 'prebuilds/linux-x64/ragen_native.node': 'addon' });
      const { addon, file } = loadNativeAddon(dir);
      expect(file).toBe(join(dir, 'prebuilds', 'linux-x64', 'ragen_native.node'));
      expect(addon.threads()).toBeGreaterThanOrEqual(1);
    });

    it('passes over a build from source that does not load, saying so when nothing else loads either', () => {
      const dir = root('broken', { 'build/native/ragen_native.node': 'not an ELF file' });
      expect(() => loadNativeAddon(dir)).toThrow(
        new RegExp(`^${dir}/build/native/ragen_native.node did not load: .*; this copy has no native/ sources`),
      );
      const both = root('broken-and-prebuilt', {
        'build/native/ragen_native.node': 'not an ELF file',
        'prebuilds/linux-x64/ragen_native.node': 'addon',
      });
      expect(loadNativeAddon(both).file).toBe(join(both, 'prebuilds', 'linux-x64', 'ragen_native.node'));
    });
  });
});
