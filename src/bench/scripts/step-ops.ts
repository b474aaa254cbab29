// Where the engine benchmark's training step spends its time, by backend op: wraps every method of the kernel
// backend with a timer, runs the bench's train step (B8 x T128 fwd+bwd+AdamW on BENCH_MODEL) and prints each op's share
// of the step and, for gemm, the GFLOP/s by shape; beside the wall time, the process CPU time of each op (both threads:
// on a busy host the steadier measure of an op's work). The warm-up steps come first: the first two touch the arena's
// pages (~50,000 and ~10,000 page faults on native), which made a kernel that writes a fresh buffer (the log-prob
// head's backward) read up to 10x its steady cost with one warm-up step. Usage: npx tsx src/bench/scripts/step-ops.ts
// [--backend native] [--steps 3] [--warmup 3]
import { parseArgs } from 'node:util';
import { BENCH_MODEL, DEFAULT_WORKLOAD, trainBatch } from '../engine.js';
import { LocalEngine } from '../../engine/index.js';
import { setBackend, type BackendName, type GemmArgs } from '../../tensor/index.js';
import { Rng } from '../../util/index.js';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: 'native' },
    steps: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '3' },
  },
});
const backend = setBackend(values.backend as BackendName) as unknown as Record<string, unknown>;
const times = new Map<string, { ms: number; cpu: number; calls: number; flops: number }>();
let on = false;
for (let o: object | null = backend; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
  for (const name of Object.getOwnPropertyNames(o)) {
    const f = backend[name];
    if (name === 'constructor' || typeof f !== 'function' || Object.hasOwn(backend, `__t_${name}`)) continue;
    backend[`__t_${name}`] = true;
    backend[name] = function (this: unknown, ...args: unknown[]) {
      if (!on) return (f as (...a: unknown[]) => unknown).apply(backend, args);
      let key = name;
      let flops = 0;
      if (name === 'gemm') {
        const g = args[0] as GemmArgs;
        key = `gemm ${g.transA ? 'T' : 'N'}${g.transB ? 'T' : 'N'} ${g.M}x${g.N}x${g.K}${g.batch > 1 ? ` x${g.batch}` : ''}`;
        flops = 2 * g.M * g.N * g.K * g.batch;
      }
      const t0 = performance.now(),
        c0 = process.cpuUsage();
      const r = (f as (...a: unknown[]) => unknown).apply(backend, args);
      const c = process.cpuUsage(c0);
      const e = times.get(key) ?? { ms: 0, cpu: 0, calls: 0, flops: 0 };
      e.ms += performance.now() - t0;
      e.cpu += (c.user + c.system) / 1000;
      e.calls++;
      e.flops += flops;
      times.set(key, e);
      return r;
    };
  }
}

const engine = LocalEngine.create(BENCH_MODEL, { backend: values.backend as BackendName, seed: 0 });
const w = DEFAULT_WORKLOAD;
const rng = new Rng(0);
const { seqs, grad } = trainBatch(w, BENCH_MODEL.vocabSize, rng);
const steps = Number(values.steps);
const warmup = Number(values.warmup);
let total = 0,
  totalCpu = 0;
for (let s = 0; s < warmup + steps; s++) {
  on = s >= warmup;
  const t0 = performance.now(),
    c0 = process.cpuUsage();
  await engine.backward(seqs, { role: 'policy' }, grad);
  await engine.optimizerStep('policy', { lr: 1e-4, weightDecay: 0.01 });
  const c = process.cpuUsage(c0);
  if (on) total += performance.now() - t0;
  if (on) totalCpu += (c.user + c.system) / 1000;
}
const rows = [...times].sort((a, b) => b[1].ms - a[1].ms);
// ops called inside other ops (the wasm backend's par, withInts, rowSplit) count in both
const inOps = rows.reduce((a, [, e]) => a + e.ms, 0);
console.log(
  `${values.backend}: step ${(total / steps).toFixed(1)} ms wall, ${(totalCpu / steps).toFixed(1)} ms CPU; in backend ops ${(inOps / steps).toFixed(1)} ms wall`,
);
console.log('    wall ms  share    CPU ms  share  calls op');
for (const [k, e] of rows) {
  const gf = e.flops
    ? ` ${(e.flops / e.ms / 1e6).toFixed(1)} GFLOP/s wall, ${(e.flops / e.cpu / 1e6).toFixed(1)} of CPU`
    : '';
  const pct = (x: number, of: number): string => `${((100 * x) / of).toFixed(1).padStart(5)}%`;
  console.log(
    `${(e.ms / steps).toFixed(2).padStart(11)} ${pct(e.ms, total)} ${(e.cpu / steps).toFixed(2).padStart(9)} ${pct(e.cpu, totalCpu)} ${String(e.calls / steps).padStart(6)}x ${k}${gf}`,
  );
}
engine.dispose();
