// Picking the default backend: a fallback says in one line what it chose and why (STYLE: never swallow).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { packageRoot } from './node-kernels.js';

const haveWasm = existsSync(join(packageRoot(), 'build', 'kernels', 'ragen.wasm'));

/** A fresh backends module (nothing chosen yet) with the Node loaders registered, and console.warn captured. */
async function fresh() {
  vi.resetModules();
  vi.stubEnv('RAGEN_BACKEND', '');
  const backends = await import('./backends.js');
  await import('./node-kernels.js');
  return { ...backends, warn: vi.spyOn(console, 'warn').mockImplementation(() => {}) };
}

describe('getBackend without RAGEN_BACKEND', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });

  it.runIf(haveWasm)('falls back from native to wasm with one line naming the choice and the reason', async () => {
    const { getBackend, registerBackendLoader, warn } = await fresh();
    registerBackendLoader('native', () => {
      throw new Error('no addon in this test');
    });
    expect(getBackend().name).toBe('wasm');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/using the wasm backend \(.*no addon in this test\)/);
  });

  it('falls back to the js reference with one line giving both reasons', async () => {
    const { getBackend, registerBackendLoader, warn } = await fresh();
    registerBackendLoader('native', () => {
      throw new Error('no addon in this test');
    });
    registerBackendLoader('wasm', () => {
      throw new Error('no wasm in this test either');
    });
    expect(getBackend().name).toBe('js');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(
      /using the slow js reference backend \(.*no addon in this test.*; .*no wasm in this test either\)/,
    );
  });
});
