// A Qwen-shaped LoRA model on the local engine with its frozen base as bf16 or float32 (model.frozenDtype): load time,
// resident memory, arena and native bytes, then a reference forward and a policy forward + backward on B sequences of T
// tokens. Usage: npx tsx src/bench/scripts/frozen-bf16-step.ts DIR [bf16|float32] [T] [B]
// (DIR from `ragen model init --shape qwen2.5-0.5b --out DIR`). Not an RL step: no rollouts, no optimizer.
import { loadavg } from 'node:os';
import { LocalEngine, sequenceBatch } from '../../engine/index.js';
import { memoryStats, nativeAllocatedBytes } from '../../tensor/index.js';

const [dir, dtypeArg = 'bf16', tArg = '64', bArg = '2'] = process.argv.slice(2);
if (!dir || (dtypeArg !== 'bf16' && dtypeArg !== 'float32')) {
  console.error('usage: frozen-bf16-step.ts DIR [bf16|float32] [T] [B]');
  process.exit(2);
}
const dtype = dtypeArg;
const [T, B] = [Number(tArg), Number(bArg)];
const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
const rss = () => gib(process.memoryUsage().rss);
let t = Date.now();
const s = () => `${((Date.now() - t) / 1000).toFixed(1)} s`;
const engine = await LocalEngine.fromPretrained(dir, {
  backend: 'native',
  lora: { r: 8, alpha: 16 },
  critic: 'shared',
  reference: true,
  frozenDtype: dtype,
});
const m = memoryStats();
console.log(
  `load (frozen ${dtype}): ${s()}, rss ${rss()}, arena in use ${gib(m.arenaInUse!)}, native ${gib(nativeAllocatedBytes())}`,
);
const rows = Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, i) => (b * 131 + i * 17) % 150000));
const batch = sequenceBatch(rows);
t = Date.now();
await engine.forward(batch, { role: 'reference' });
console.log(`reference forward ${B} x ${T}: ${s()}, rss ${rss()}`);
t = Date.now();
await engine.backward(batch, { role: 'policy' }, (out) => ({ logprobs: out.logprobs.map(() => -1 / (B * T)) }));
console.log(
  `policy forward + backward ${B} x ${T}: ${s()}, rss ${rss()}, arena reserved ${gib(memoryStats().arenaReserved!)}`,
);
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
