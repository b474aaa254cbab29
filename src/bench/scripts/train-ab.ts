// Paired A/B of a train-step change, for a host too noisy for separate timed runs (other processes take the cores for
// seconds at a time). Sets `globalThis.RAGEN_AB` to 0 on even steps and 1 on odd ones of the engine benchmark's train
// step (B8 x T128 fwd+bwd+AdamW on BENCH_MODEL). To compare two versions of some code, branch on it for the
// experiment, e.g. `if ((globalThis as { RAGEN_AB?: number }).RAGEN_AB === 1) { new } else { old }`; on the wasm
// backend the flag is also the control block's last int, as step-ab.ts sets it (`load<i32>(512 * 1024 + 60)` in
// assembly/, rebuilt with `RAGEN_NO_NATIVE=1 node scripts/build-kernels.mjs`). Then run this:
// neighbouring steps are a quarter second apart, so the host's slow spells hit both alike. With nothing reading the
// flag it is an A/A run: its spread is the noise floor. Beside wall time, the process CPU time (all threads), the
// steadier measure of the work on a host whose other processes hold the cores. Take the branch out again before committing (step-ab.ts is
// the same for decode kernels). Usage: npx tsx src/bench/scripts/train-ab.ts [--backend native] [--pairs 20]
import { parseArgs } from 'node:util';
import { BENCH_MODEL, DEFAULT_WORKLOAD, trainBatch } from '../engine.js';
import { LocalEngine } from '../../engine/index.js';
import { CONTROL_ADDR, getBackend, type BackendName, type WasmBackend } from '../../tensor/index.js';
import { Rng } from '../../util/index.js';

const { values } = parseArgs({
  options: { backend: { type: 'string', default: 'native' }, pairs: { type: 'string', default: '20' } },
});
const flag = globalThis as { RAGEN_AB?: number };
const EXPERIMENT_ADDR = CONTROL_ADDR + 60; // unused by the thread pool (src/tensor/thread-pool.ts)
const engine = LocalEngine.create(BENCH_MODEL, { backend: values.backend as BackendName, seed: 0 });
const arena = values.backend === 'wasm' ? (getBackend() as WasmBackend).arena : null;
const w = DEFAULT_WORKLOAD;
const rng = new Rng(0);
const { seqs, grad } = trainBatch(w, BENCH_MODEL.vocabSize, rng);

/** One step of `variant`: wall and CPU ms. */
async function step(variant: number): Promise<[number, number]> {
  flag.RAGEN_AB = variant;
  if (arena) arena.i32[EXPERIMENT_ADDR >> 2] = variant;
  const t0 = performance.now(),
    c0 = process.cpuUsage();
  await engine.backward(seqs, { role: 'policy' }, grad);
  await engine.optimizerStep('policy', { lr: 1e-4, weightDecay: 0.01 });
  const c = process.cpuUsage(c0);
  return [performance.now() - t0, (c.user + c.system) / 1000];
}

for (let i = 0; i < 2; i++) await step(i % 2); // warm-up: the arena's pages, both variants' first calls
const pairs = Number(values.pairs);
const wall = { total: [0, 0], ratios: [] as number[] };
const cpu = { total: [0, 0], ratios: [] as number[] };
for (let p = 0; p < pairs; p++) {
  // alternate which variant goes first, so a trend within a pair favours neither
  const first = p % 2;
  const a = await step(first);
  const b = await step(1 - first);
  const [v0, v1] = first === 0 ? [a, b] : [b, a];
  for (const [k, m] of [wall, cpu].entries()) {
    m.total[0]! += v0[k]!;
    m.total[1]! += v1[k]!;
    m.ratios.push(v1[k]! / v0[k]!);
  }
}
flag.RAGEN_AB = undefined;
if (arena) arena.i32[EXPERIMENT_ADDR >> 2] = 0;
for (const [name, m] of [['wall', wall] as const, ['CPU', cpu] as const]) {
  const r = m.ratios.sort((a, b) => a - b);
  const q = (f: number): string => r[Math.floor(f * (r.length - 1))]!.toFixed(3);
  console.log(
    `${values.backend} ${name}: variant 1 / variant 0: total ${(m.total[1]! / m.total[0]!).toFixed(3)}, per pair median ` +
      `${q(0.5)} (quartiles ${q(0.25)}-${q(0.75)}), ${pairs} pairs; ${(m.total[0]! / pairs).toFixed(1)} / ` +
      `${(m.total[1]! / pairs).toFixed(1)} ms a step on average`,
  );
}
engine.dispose();
