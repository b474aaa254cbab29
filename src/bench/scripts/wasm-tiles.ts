// Why the wasm GEMM micro-kernels are 4 rows x 8 columns: compiles one kernel per register tile (rows x columns of
// f32x4 accumulators, A packed k-major, B in panels as decodePack makes them) with AssemblyScript, and prints each
// one's GFLOP/s on one thread beside the f32x4 FMA probe (assembly/probe.ts). V8 keeps 8 accumulators in registers;
// with 10 or more it spills them and the rate halves.
// Usage: npx tsx src/bench/scripts/wasm-tiles.ts
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';

const root = join(dirname(new URL(import.meta.url).pathname), '..', '..', '..');
const tiles: [rows: number, panels: number][] = [
  [4, 1],
  [2, 2],
  [5, 1],
  [6, 1],
  [3, 2],
]; // panels of 8 columns

function kernel(R: number, P: number): string {
  const W = 8 * P,
    acc: string[] = [],
    body: string[] = [],
    stores: string[] = [];
  for (let r = 0; r < R; r++) for (let q = 0; q < 2 * P; q++) acc.push(`s${r}_${q}`);
  for (let q = 0; q < 2 * P; q++) body.push(`const b${q} = v128.load(bp, ${16 * q});`);
  for (let r = 0; r < R; r++) {
    body.push(`x = v128.load32_splat(ap, ${4 * r});`);
    for (let q = 0; q < 2 * P; q++) body.push(`s${r}_${q} = madd(x, b${q}, s${r}_${q});`);
  }
  for (let r = 0; r < R; r++)
    for (let q = 0; q < 2 * P; q++) stores.push(`v128.store(cb + <usize>(${r} * N) * 4, s${r}_${q}, ${16 * q});`);
  return `export function k${R}x${W}(M: i32, N: i32, K: i32, pa: usize, pw: usize, c: usize): void {
  for (let p = 0; p < N / ${W}; p++) {
    const panel = pw + <usize>(p * K * ${W}) * 4;
    for (let i = 0; i + ${R} <= M; i += ${R}) {
      ${acc.map((a) => `let ${a} = f32x4.splat(0);`).join(' ')}
      let ap = pa + <usize>(i * K) * 4, bp = panel, x = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        ${body.join('\n        ')}
        ap += ${4 * R}; bp += ${4 * W};
      }
      const cb = c + <usize>(i * N + p * ${W}) * 4;
      ${stores.join('\n      ')}
    }
  }
}`;
}

const dir = mkdtempSync(join(tmpdir(), 'ragen-tiles-'));
writeFileSync(join(dir, 'simd.ts'), readFileSync(join(root, 'assembly', 'simd.ts')));
writeFileSync(join(dir, 'probe.ts'), readFileSync(join(root, 'assembly', 'probe.ts')));
writeFileSync(
  join(dir, 'tiles.ts'),
  `import { madd } from './simd';\nexport { fmaProbe } from './probe';\n${tiles.map(([r, p]) => kernel(r, p)).join('\n')}\n`,
);
const asc = join(dirname(createRequire(import.meta.url).resolve('assemblyscript/package.json')), 'bin', 'asc.js');
execFileSync(
  process.execPath,
  [
    asc,
    join(dir, 'tiles.ts'),
    '-O3',
    '--runtime',
    'stub',
    '--noAssert',
    '--enable',
    'simd',
    '--enable',
    'relaxed-simd',
    '--importMemory',
    '--initialMemory',
    '1',
    '--maximumMemory',
    '65536',
    '-o',
    join(dir, 'tiles.wasm'),
  ],
  { stdio: 'inherit' },
);

setFlagsFromString('--experimental-wasm-relaxed-simd');
const memory = new WebAssembly.Memory({ initial: 2048, maximum: 65536 });
const ex = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(join(dir, 'tiles.wasm'))), {
  env: { memory, abort() {} },
}).exports as Record<string, (...a: number[]) => number>;
const f32 = new Float32Array(memory.buffer);
for (let i = 0; i < f32.length; i += 7) f32[i] = Math.random() - 0.5;
const best = (fn: () => void, reps = 15): number => {
  fn();
  let b = Infinity;
  for (let r = 0; r < reps; r++) {
    const t = performance.now();
    fn();
    b = Math.min(b, performance.now() - t);
  }
  return b;
};
const n = 1 << 22;
console.log(`f32x4 FMA probe: ${((96 * n) / best(() => ex.fmaProbe!(n, 1), 5) / 1e6).toFixed(1)} GFLOP/s`);
const shapes = [
  [32, 1536, 256],
  [32, 256, 768],
  [32, 2048, 256],
]; // one thread's share of the decode step's products
for (const [R, P] of tiles) {
  const name = `k${R}x${8 * P}`;
  const cells = shapes.map(([M0, N, K]) => {
    const M = Math.floor(M0! / R) * R;
    const ms = best(() => ex[name]!(M, N!, K!, 1 << 20, 8 << 20, 32 << 20));
    return `${M}x${N}x${K} ${((2 * M * N! * K!) / ms / 1e6).toFixed(1)}`;
  });
  console.log(`${name.padEnd(6)} (${R * 2 * P} accumulators): ${cells.join(', ')} GFLOP/s`);
}
