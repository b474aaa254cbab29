// Kernel microbenchmark: matmul GFLOP/s (square 512/1024 and the reference transformer's shapes, every
// transpose), ms per fused op, and a full train step of the reference model built from src/tensor ops.
// Each figure is the best of several runs (see `time`); the header line prints the load average.
// Run: npx tsx src/bench/scripts/bench-kernels.ts [--backends wasm,native] [--quick] [--step-only] [--json]
import os from 'node:os';
import { Rng } from '../../util/index.js';
import * as T from '../../tensor/index.js';
import type { BackendName, Tensor } from '../../tensor/index.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes('--quick');
const asJson = args.includes('--json');
const backends = (opt('--backends')?.split(',') ?? ['js', 'wasm', 'native']).filter((b) =>
  T.backendAvailable(b as BackendName),
) as BackendName[];

/** Best (minimum) ms of fn over reps after warmup: on a shared machine the minimum is the least disturbed run. */
function time(fn: () => void, reps: number, warmup = 2): number {
  for (let i = 0; i < warmup; i++) fn();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  return Math.min(...ts);
}

const results: Record<string, Record<string, number>> = {};
const record = (backend: string, key: string, value: number): void => {
  (results[backend] ??= {})[key] = Math.round(value * 1000) / 1000;
  if (!asJson) console.log(`${backend.padEnd(7)} ${key.padEnd(46)} ${value.toFixed(2)}`);
};

function benchMatmul(backend: BackendName): void {
  const rng = new Rng(1);
  const cases: [string, number, number, number, boolean, boolean][] = [
    ['512', 512, 512, 512, false, false],
    ['1024', 1024, 1024, 1024, false, false],
    ['qkvo 1024x256x256', 1024, 256, 256, false, true],
    ['mlp up 1024x768x256', 1024, 768, 256, false, true],
    ['mlp down 1024x256x768', 1024, 256, 768, false, true],
    ['lm head 1024x2048x256', 1024, 2048, 256, false, true],
    ['dW head 2048x256x1024 (A^T)', 2048, 256, 1024, true, false],
    ['dX head 1024x256x2048', 1024, 256, 2048, false, false],
  ];
  for (const [name, M, N, K, tA, tB] of backend === 'js' ? cases.slice(0, 1) : cases) {
    if (quick && M * N * K > 2 ** 28) continue;
    T.tidy(() => {
      const a = T.randn(tA ? [K, M] : [M, K], rng),
        b = T.randn(tB ? [N, K] : [K, N], rng);
      const ms = time(() => T.tidy(() => void T.matmul(a, b, { transA: tA, transB: tB })), backend === 'js' ? 2 : 7, 1);
      record(backend, `matmul ${name} GFLOP/s`, (2 * M * N * K) / ms / 1e6);
    });
  }
}

function benchFused(backend: BackendName): void {
  const rng = new Rng(2);
  const reps = backend === 'js' ? 2 : 10;
  T.tidy(() => {
    const x = T.randn([1024, 256], rng, 1, { requiresGrad: true }),
      w = T.randn([256], rng, 1, { requiresGrad: true });
    const logits = T.randn([1024, 2048], rng, 1, { requiresGrad: true });
    const g = T.randn([1024, 768], rng, 1, { requiresGrad: true }),
      u = T.randn([1024, 768], rng, 1, { requiresGrad: true });
    const q = T.randn([8, 4, 128, 64], rng, 1, { requiresGrad: true }),
      k = T.randn([8, 2, 128, 64], rng, 1, { requiresGrad: true });
    const v = T.randn([8, 2, 128, 64], rng, 1, { requiresGrad: true });
    const targets = Int32Array.from({ length: 1024 }, () => rng.int(2048));
    const pos = Int32Array.from({ length: 128 }, (_, i) => i);
    const fwdBwd = (f: () => Tensor): number =>
      time(
        () =>
          T.tidy(() => {
            const y = f();
            y.backward(y.size === 1 ? undefined : T.ones(y.shape));
          }),
        reps,
      );
    record(
      backend,
      'rmsNorm (1024x256) fwd+bwd ms',
      fwdBwd(() => T.rmsNorm(x, w)),
    );
    record(
      backend,
      'swiglu (1024x768) fwd+bwd ms',
      fwdBwd(() => T.swiglu(g, u)),
    );
    record(
      backend,
      'rope (8x4x128x64) fwd+bwd ms',
      fwdBwd(() => T.rope(q, pos, 10000)),
    );
    record(
      backend,
      'crossEntropy (1024x2048) fwd+bwd ms',
      fwdBwd(() => T.crossEntropy(logits, targets)),
    );
    record(
      backend,
      'entropy (1024x2048) fwd+bwd ms',
      fwdBwd(() => T.entropy(logits)),
    );
    record(
      backend,
      'attention (8x4x128x64, 2 kv) fwd+bwd ms',
      fwdBwd(() => T.causalAttention(q, k, v)),
    );
    record(
      backend,
      'add bias (1024x768) fwd+bwd ms',
      fwdBwd(() => T.add(g, T.narrow(u, 0, 0, 1).reshape(768))),
    );
    const params = Array.from({ length: 4 }, () => T.randn([1024, 1024], rng, 0.02, { requiresGrad: true }));
    for (const p of params) p.grad = T.keep(T.randn([1024, 1024], rng));
    const opt = new T.AdamW(params, { lr: 1e-3 });
    record(
      backend,
      'AdamW step (4M params) ms',
      time(() => opt.step(), reps),
    );
    record(
      backend,
      'clipGradNorm (4M params) ms',
      time(() => void T.clipGradNorm(params, 1e9), reps),
    );
    for (const p of params) p.grad?.dispose();
    opt.dispose();
  });
}

/**
 * The reference model of `ragen bench engine` (vocab 2048, C 256, 6 layers, 4 heads / 2 KV, MLP 768, tied), from raw
 * ops.
 */
function benchStep(backend: BackendName): void {
  const rng = new Rng(3);
  const [V, C, L, H, Hkv, F, B, Tn] = [2048, 256, 6, 4, 2, 768, 8, 128];
  const D = C / H;
  const p = (shape: number[], std = 0.02): Tensor => T.randn(shape, rng, std, { requiresGrad: true });
  const one = (n: number): Tensor => T.ones([n], { requiresGrad: true });
  const wte = p([V, C]);
  const layers = Array.from({ length: L }, () => ({
    n1: one(C),
    wq: p([C, C]),
    wk: p([Hkv * D, C]),
    wv: p([Hkv * D, C]),
    wo: p([C, C]),
    n2: one(C),
    wg: p([F, C]),
    wu: p([F, C]),
    wd: p([C, F]),
  }));
  const nf = one(C);
  const params = [wte, nf, ...layers.flatMap((l) => Object.values(l))];
  const opt = new T.AdamW(params, { lr: 1e-3 });
  const ids = Int32Array.from({ length: B * Tn }, () => rng.int(V));
  const targets = Int32Array.from({ length: B * Tn }, () => rng.int(V));
  const pos = Int32Array.from({ length: Tn }, (_, i) => i);
  const heads = (x: Tensor, h: number): Tensor => T.transpose(x.reshape(B, Tn, h, D), 1, 2); // (B, h, T, D)
  const step = (): number =>
    T.tidy(() => {
      let x = T.embedding(wte, ids); // (B*T, C)
      for (const l of layers) {
        const h = T.rmsNorm(x, l.n1, 1e-6);
        const q = T.rope(heads(T.linear(h, l.wq), H), pos, 10000);
        const k = T.rope(heads(T.linear(h, l.wk), Hkv), pos, 10000);
        const v = heads(T.linear(h, l.wv), Hkv);
        const a = T.transpose(T.causalAttention(q, k, v), 1, 2).reshape(B * Tn, C);
        x = T.add(x, T.linear(a, l.wo));
        const h2 = T.rmsNorm(x, l.n2, 1e-6);
        x = T.add(x, T.linear(T.swiglu(T.linear(h2, l.wg), T.linear(h2, l.wu)), l.wd));
      }
      const logits = T.linear(T.rmsNorm(x, nf, 1e-6), wte);
      const loss = T.crossEntropy(logits, targets);
      loss.backward();
      T.clipGradNorm(params, 1.0);
      opt.step();
      opt.zeroGrad();
      return loss.item();
    });
  const reps = backend === 'js' ? 1 : quick ? 3 : 6;
  record(
    backend,
    'train step B8xT128 (5.3M-param ref model) ms',
    time(() => void step(), reps, 1),
  );
  opt.dispose();
  for (const t of params) t.dispose();
}

if (!asJson)
  console.log(
    `node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} x ${os.cpus().length}, load average ${os.loadavg()[0]!.toFixed(2)}`,
  );
for (const backend of backends) {
  T.setBackend(backend);
  const be = T.getBackend() as { variant?: string; threads?: number; info?: () => string };
  if (!asJson)
    console.log(
      `# ${backend}${be.variant ? ` (${be.variant}, ${be.threads} thread${be.threads === 1 ? '' : 's'}${be.info ? `, ${be.info()}` : ''})` : ''}`,
    );
  if (!args.includes('--step-only')) {
    benchMatmul(backend);
    benchFused(backend);
  }
  if (backend !== 'js' || args.includes('--js-step')) benchStep(backend);
}
if (asJson) console.log(JSON.stringify(results, null, 2));
