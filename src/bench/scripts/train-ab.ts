// Paired A/B of the native train step: A runs the native backend as it is, B sends the listed ops to the wasm kernels
// it inherits (WasmBackend's methods), alternating step by step so the host's slow spells hit both alike. Prints the
// median of B/A over neighbouring pairs, in wall time and in process CPU time (both threads; steadier on a busy host).
// With --addon FILE, B is instead another build of the native addon (e.g. the previous commit's, built with
// scripts/build-native.mjs into FILE) running every op: a kernel change measured in one process, step by step.
// Usage: npx tsx src/bench/scripts/train-ab.ts [--ops swiglu,rmsNorm | --addon FILE] [--pairs 6]
// (default ops: every one the native backend takes over from wasm besides gemm and attention)
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { BENCH_MODEL, DEFAULT_WORKLOAD } from '../engine.js';
import { LocalEngine, sequenceBatch, type ForwardResult, type OutputGradients } from '../../engine/index.js';
import { setBackend } from '../../tensor/index.js';
import { Rng } from '../../util/index.js';

const NATIVE_OPS = [
  'binary',
  'axpy',
  'swiglu',
  'swigluBackward',
  'rmsNorm',
  'rmsNormBackward',
  'softmax',
  'softmaxBackward',
  'logprobTarget',
  'logprobTargetBackward',
  'entropy',
  'entropyBackward',
  'adamw',
  'rope',
  'permute',
];
const { values } = parseArgs({
  options: {
    ops: { type: 'string', default: NATIVE_OPS.join(',') },
    addon: { type: 'string' },
    pairs: { type: 'string', default: '6' },
  },
});
const ops = values.addon ? [] : values.ops.split(',');
const backend = setBackend('native') as unknown as Record<string, unknown>;
const addonA = backend.addon;
const addonB: unknown = values.addon ? createRequire(import.meta.url)(values.addon) : null;
if (values.addon && typeof (addonB as Record<string, unknown>).gemm !== 'function')
  throw new Error(`--addon ${values.addon}: not a build of the native addon (it has no gemm)`);
// NativeBackend extends WasmBackend: the wasm kernels are the prototype's prototype's methods
const wasmOps = Object.getPrototypeOf(Object.getPrototypeOf(backend)) as Record<string, unknown>;
const unknown = ops.filter((o) => typeof wasmOps[o] !== 'function');
if (unknown.length > 0) throw new Error(`--ops: ${unknown.join(', ')} not a backend op; e.g. ${NATIVE_OPS.join(',')}`);
const variant = (b: boolean): void => {
  if (addonB) {
    backend.addon = b ? addonB : addonA;
    backend.memoryBytes = -1; // the next call tells this addon where the arena is
  }
  for (const o of ops)
    if (b) backend[o] = wasmOps[o];
    else delete backend[o];
};

const engine = LocalEngine.create(BENCH_MODEL, { backend: 'native', seed: 0 });
const w = DEFAULT_WORKLOAD;
const rng = new Rng(0);
const seqs = sequenceBatch(
  Array.from({ length: w.batch }, () => Array.from({ length: w.seq + 1 }, () => rng.int(BENCH_MODEL.vocabSize))),
);
const n = w.batch * w.seq;
const grad = (out: ForwardResult): OutputGradients => ({
  logprobs: out.logprobs.map((_, i) => (i % seqs.T > 0 ? -1 / n : 0)),
});
async function step(): Promise<[number, number]> {
  const t0 = performance.now(),
    c0 = process.cpuUsage();
  await engine.backward(seqs, { role: 'policy' }, grad);
  await engine.optimizerStep('policy', { lr: 1e-4, weightDecay: 0.01 });
  const c = process.cpuUsage(c0);
  return [performance.now() - t0, (c.user + c.system) / 1000];
}
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
await step(); // warm-up
const wall: number[] = [],
  cpu: number[] = [],
  a: number[][] = [];
for (let i = 0; i < Number(values.pairs); i++) {
  variant(false);
  const [wa, ca] = await step();
  variant(true);
  const [wb, cb] = await step();
  wall.push(wb / wa);
  cpu.push(cb / ca);
  a.push([wa, ca, wb, cb]);
}
variant(false);
const ms = (k: number): string => median(a.map((r) => r[k]!)).toFixed(0);
console.log(addonB ? `B = the addon ${values.addon}` : `B = wasm for ${ops.join(', ')}`);
console.log(`A (native) median step: ${ms(0)} ms wall, ${ms(1)} ms CPU; B: ${ms(2)} ms wall, ${ms(3)} ms CPU`);
console.log(
  `B/A median over ${wall.length} pairs: wall ${median(wall).toFixed(3)}, CPU ${median(cpu).toFixed(3)} (load average ${loadavg()[0]!.toFixed(2)})`,
);
engine.dispose();
