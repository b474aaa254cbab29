// The kernels' declared signatures against the built artefacts: the wasm modules export exactly the functions of
// src/tensor/wasm-kernels.ts with their parameter counts, and the native addon rejects a call with the wrong argument
// count or a non-number argument with a TypeError naming the function, as NATIVE_ADDON_ARITY declares it.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { NATIVE_ADDON_ARITY, type NativeAddon } from './native-addon.js';
import { packageRoot } from './node-kernels.js';
import { checkKernels } from './wasm-backend.js';
import { WASM_KERNEL_ARITY } from './wasm-kernels.js';

const kernels = join(packageRoot(), 'build', 'kernels');
const addonFile = join(packageRoot(), 'build', 'native', 'ragen_native.node');

describe.runIf(existsSync(join(kernels, 'ragen.wasm')))('the wasm kernel modules', () => {
  for (const [file, shared] of [
    ['ragen.wasm', true],
    ['ragen-relaxed.wasm', true],
    ['ragen-single.wasm', false],
  ] as const) {
    it(`${file} exports exactly the declared functions, each with its declared parameter count`, () => {
      setFlagsFromString('--experimental-wasm-relaxed-simd');
      const module = new WebAssembly.Module(readFileSync(join(kernels, file)));
      const exported = WebAssembly.Module.exports(module)
        .filter((e) => e.kind === 'function')
        .map((e) => e.name);
      expect([...exported].sort()).toEqual(Object.keys(WASM_KERNEL_ARITY).sort());
      const memory = new WebAssembly.Memory({ initial: 32, maximum: 65536, shared });
      const inst = new WebAssembly.Instance(module, {
        env: {
          memory,
          abort: () => {
            throw new Error('wasm abort');
          },
        },
      });
      for (const [name, n] of Object.entries(WASM_KERNEL_ARITY))
        expect([name, (inst.exports[name] as (...a: number[]) => unknown).length]).toEqual([name, n]);
      expect(() => checkKernels(inst.exports)).not.toThrow();
    });
  }

  it('checkKernels names a missing export and a parameter count that differs', () => {
    const fake: Record<string, unknown> = Object.fromEntries(
      Object.entries(WASM_KERNEL_ARITY).map(([name, n]) => [
        name,
        new Function(...Array.from({ length: n }, (_, i) => `a${i}`), ''),
      ]),
    );
    delete fake.decodeStep;
    fake.gemm = (a: number) => a;
    expect(() => checkKernels(fake)).toThrow(/gemm takes 1 arguments, not 14; decodeStep is missing/);
  });
});

describe.runIf(existsSync(addonFile))('the native addon at the N-API boundary', () => {
  const addon = createRequire(import.meta.url)(addonFile) as NativeAddon & Record<string, (...a: unknown[]) => unknown>;

  it('has every declared function', () => {
    for (const name of Object.keys(NATIVE_ADDON_ARITY)) expect([name, typeof addon[name]]).toEqual([name, 'function']);
  });

  for (const [name, n] of Object.entries(NATIVE_ADDON_ARITY)) {
    it(`${name} throws a TypeError naming itself when called with ${n + 1}${n > 0 ? ` or ${n - 1}` : ''} arguments`, () => {
      const call = (args: unknown[]) => () => addon[name]!(...args);
      expect(call(new Array(n + 1).fill(0))).toThrow(
        new TypeError(`ragen native ${name}: expected ${n} arguments, got ${n + 1}`),
      );
      if (n > 0)
        expect(call(new Array(n - 1).fill(0))).toThrow(
          new TypeError(`ragen native ${name}: expected ${n} arguments, got ${n - 1}`),
        );
    });
  }

  it('rejects a non-number argument (before reading any memory) and a setMemory that is neither a Float32Array nor a native block', () => {
    const args: unknown[] = [0, 0, 4, 4];
    args[2] = '4';
    expect(() => addon.decodePack(...(args as [number, number, number, number]))).toThrow(
      new TypeError('ragen native decodePack: argument 2 must be a number'),
    );
    expect(() => addon.gemm(0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, null as unknown as number)).toThrow(
      /gemm: argument 16 must be a number/,
    );
    expect(() => addon.setMemory(new Int32Array(4) as unknown as Float32Array)).toThrow(
      new TypeError("ragen native setMemory: expected a Float32Array over the arena or a native block's address"),
    );
    expect(() => addon.setMemory(4096)).toThrow(
      new TypeError('ragen native setMemory: 4096 is not the address of a live native block'),
    );
  });
});
