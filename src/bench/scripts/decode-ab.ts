// A/B of the two sampling paths on one backend: the op-by-op path and the fused decode kernels
// (src/model/decode-fast.ts, Backend.decodeKernels), on `ragen bench engine`'s decode workload (64 x 64-token prompts,
// 128 new tokens).
// `--new-tokens 1` times the prefill alone (and the first token's sampling). Each fused call also prints where its
// time went: FastDecoder.prefill (0 when the backend prefills op by op), the mean of its steps, and sampling.
// Usage: npx tsx src/bench/scripts/decode-ab.ts [--backend wasm] [--rounds 3] [--new-tokens 128] [--only
// fused|op-by-op]
import { parseArgs } from 'node:util';
import { BENCH_MODEL, DEFAULT_WORKLOAD } from '../engine.js';
import { FastDecoder, generate, Transformer } from '../../model/index.js';
import { setBackend, type BackendName } from '../../tensor/index.js';
import { Rng } from '../../util/index.js';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: 'wasm' },
    rounds: { type: 'string', default: '3' },
    'new-tokens': { type: 'string', default: String(DEFAULT_WORKLOAD.newTokens) },
    only: { type: 'string' },
  },
});
setBackend(values.backend as BackendName);
const model = Transformer.init(BENCH_MODEL, 0);
const w = DEFAULT_WORKLOAD;
const rng = new Rng(0);
const prompts = Array.from({ length: w.decodeBatch }, () =>
  Array.from({ length: w.prompt }, () => rng.int(BENCH_MODEL.vocabSize)),
);
// in-process timers around the fused path's phases
const spent = { prefill: 0, step: 0, steps: 0, sample: 0 };
for (const phase of ['prefill', 'step', 'sample'] as const) {
  const proto = FastDecoder.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = proto[phase]!;
  proto[phase] = function (this: unknown, ...a: unknown[]) {
    const t = performance.now();
    const r = orig.apply(this, a);
    spent[phase] += performance.now() - t;
    if (phase === 'step') spent.steps++;
    return r;
  };
}
const best: Record<string, number> = {};
for (let round = 0; round < Number(values.rounds); round++) {
  for (const fastDecode of values.only ? [values.only === 'fused'] : [false, true]) {
    const name = fastDecode ? 'fused' : 'op-by-op';
    generate(model, prompts, { maxNewTokens: Number(values['new-tokens']), temperature: 1, seed: 1, fastDecode }); // warm-up with the same shapes
    Object.assign(spent, { prefill: 0, step: 0, steps: 0, sample: 0 });
    const t0 = performance.now();
    const out = generate(model, prompts, {
      maxNewTokens: Number(values['new-tokens']),
      temperature: 1,
      seed: 2,
      fastDecode,
    });
    const ms = performance.now() - t0;
    const rate = out.reduce((a, g) => a + g.tokens.length, 0) / (ms / 1000);
    best[name] = Math.max(best[name] ?? 0, rate);
    const phases = fastDecode
      ? `: prefill ${spent.prefill.toFixed(0)} ms, ${spent.steps} steps of ${(spent.step / Math.max(1, spent.steps)).toFixed(1)} ms, sampling ${spent.sample.toFixed(0)} ms`
      : '';
    console.log(`round ${round + 1} ${name}: ${rate.toFixed(0)} tok/s (${ms.toFixed(0)} ms${phases})`);
  }
}
console.log(
  `best of ${values.rounds} (${values.backend}): ${Object.entries(best)
    .map(([k, v]) => `${k} ${v.toFixed(0)} tok/s`)
    .join(', ')}`,
);
