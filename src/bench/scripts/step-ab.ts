// Paired A/B of a wasm decode-kernel change, for a host too noisy for separate timed runs (decode calls swing more from
// one minute to the next than a change worth having). The control block's last int
// (EXPERIMENT_ADDR) is set before each fused decode step: 0 on even steps, 1 on odd ones. To compare two versions of a
// kernel, branch on it in assembly/ for the experiment, e.g. `if (load<i32>(512 * 1024 + 60) == 1) { new } else { old
// }`,
// rebuild (`RAGEN_NO_NATIVE=1 node scripts/build-kernels.mjs`) and run this. Neighbouring steps are milliseconds apart,
// so the host's slow spells hit both versions alike. With no kernel reading the flag it is an A/A run: its spread is
// the noise floor. Take the branch out again before committing.
// Usage: npx tsx src/bench/scripts/step-ab.ts [--rounds 3]
import { parseArgs } from 'node:util';
import { BENCH_MODEL, DEFAULT_WORKLOAD } from '../engine.js';
import { FastDecoder, generate, Transformer } from '../../model/index.js';
import { CONTROL_ADDR, setBackend } from '../../tensor/index.js';
import type { WasmBackend } from '../../tensor/index.js';
import { Rng } from '../../util/index.js';

const EXPERIMENT_ADDR = CONTROL_ADDR + 60; // unused by the thread pool (src/tensor/thread-pool.ts)
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const arena = (setBackend('wasm') as WasmBackend).arena;
const model = Transformer.init(BENCH_MODEL, 0);
const w = DEFAULT_WORKLOAD;
const rng = new Rng(0);
const prompts = Array.from({ length: w.decodeBatch }, () =>
  Array.from({ length: w.prompt }, () => rng.int(BENCH_MODEL.vocabSize)),
);

const total = [0, 0];
const ratios: number[] = []; // each odd step's time over the even step before it
let steps = 0,
  previous = 0;
const proto = FastDecoder.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
const [step, prefill] = [proto.step!, proto.prefill!];
proto.step = function (this: unknown, ...a: unknown[]) {
  const variant = steps++ % 2;
  arena.i32[EXPERIMENT_ADDR >> 2] = variant;
  const t0 = performance.now();
  const r = step.apply(this, a);
  const ms = performance.now() - t0;
  total[variant]! += ms;
  if (variant === 1) ratios.push(ms / previous);
  previous = ms;
  return r;
};
proto.prefill = function (this: unknown, ...a: unknown[]) {
  arena.i32[EXPERIMENT_ADDR >> 2] = 0;
  steps = 0;
  return prefill.apply(this, a);
};

generate(model, prompts, { maxNewTokens: w.newTokens, temperature: 1, seed: 1 }); // warm-up
total.fill(0);
ratios.length = 0;
for (let r = 0; r < Number(values.rounds); r++)
  generate(model, prompts, { maxNewTokens: w.newTokens, temperature: 1, seed: 2 + r });
ratios.sort((a, b) => a - b);
const q = (f: number): string => ratios[Math.floor(f * (ratios.length - 1))]!.toFixed(3);
console.log(
  `variant 1 / variant 0: total ${(total[1]! / total[0]!).toFixed(3)}, per pair median ${q(0.5)} (quartiles ${q(0.25)}-${q(0.75)}), ` +
    `${ratios.length} pairs, variant 0 steps ${(total[0]! / ratios.length).toFixed(2)} ms on average`,
);
