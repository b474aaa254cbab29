import { describe, expect, it } from 'vitest';
import {
  add,
  backendAvailable,
  entropy,
  getBackend,
  linear,
  memoryStats,
  setBackend,
  logprobOfTarget,
  mul,
  randn,
  sum,
  tensor,
  tidy,
  type Tensor,
} from '../tensor/index.js';
import { Rng } from '../util/index.js';
import { modelConfig } from './config.js';
import { packTokens, tokenForward, ValueHead } from './forward.js';
import { LoraAdapters } from './lora.js';
import { rowsPerChunk, tokenStats } from './token-stats.js';
import { Transformer } from './transformer.js';

const config = modelConfig({
  vocabSize: 40,
  hiddenSize: 32,
  intermediateSize: 48,
  numLayers: 3,
  numHeads: 4,
  numKvHeads: 2,
  qkvBias: true,
});

/** Largest |a - b| over max |b| (0 when equal). */
function relErr(a: Float32Array, b: Float32Array): number {
  let d = 0,
    m = 1e-30;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / m;
}

function probe(n: number, phase: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.7 + phase));
}

describe('chunked token statistics', () => {
  const N = 10,
    C = 16,
    V = 40;
  const targets = Int32Array.from({ length: N }, (_, i) => (i * 13 + 5) % V);

  /** Values and gradients (hidden, head) of sum(lp * a) + sum(ent * b), chunked or from the whole logits. */
  function run(chunkBytes: number | null) {
    const rng = new Rng(3);
    const h = randn([N, C], rng, 1, { requiresGrad: true });
    const w = randn([V, C], rng, 0.5, { requiresGrad: true });
    const out = tidy(() => {
      let lp: Tensor, ent: Tensor;
      if (chunkBytes === null) {
        const logits = linear(h, w);
        lp = logprobOfTarget(logits, targets);
        ent = entropy(logits);
      } else {
        const r = tokenStats(h, w, targets, { logprobs: true, entropy: true }, chunkBytes);
        lp = r.logprobs!;
        ent = r.entropy!;
      }
      const loss = add(sum(mul(lp, tensor(probe(N, 0)))), sum(mul(ent, tensor(probe(N, 1)))));
      loss.backward();
      return { lp: lp.toFloat32Array(), ent: ent.toFloat32Array() };
    });
    return { ...out, dh: h.grad!.toFloat32Array(), dw: w.grad!.toFloat32Array() };
  }

  it('cuts the rows into chunks of at most chunkBytes / (3 x 4 x V)', () => {
    expect(rowsPerChunk(151936, 256 << 20)).toBe(147);
    expect(rowsPerChunk(100, 1)).toBe(1);
  });

  it('gives the log-probs, entropy and gradients of the whole-logits path, in chunks of 3 rows', () => {
    const chunk = 3 * 3 * 4 * V; // 3 rows a chunk: 4 chunks for 10 rows, the last short
    expect(rowsPerChunk(V, chunk)).toBe(3);
    const a = run(chunk);
    const b = run(null);
    expect(relErr(a.lp, b.lp)).toBeLessThan(1e-6);
    expect(relErr(a.ent, b.ent)).toBeLessThan(1e-6);
    expect(relErr(a.dh, b.dh)).toBeLessThan(1e-5);
    expect(relErr(a.dw, b.dw)).toBeLessThan(1e-5);
    expect(Math.max(...a.dw.map(Math.abs))).toBeGreaterThan(1e-3); // the head's gradient is not trivially zero
  });

  it('computes the logits once when one chunk holds every row, with the whole-logits values and gradients', () => {
    const backend = getBackend();
    const gemm = backend.gemm.bind(backend);
    let logitProducts = 0; // products with an (N, V) result: the head's forward, or a recompute of it
    backend.gemm = (args) => {
      if (args.M === N && args.N === V && !args.accumulate) logitProducts++;
      gemm(args);
    };
    let a: ReturnType<typeof run>;
    try {
      a = run(3 * N * 4 * V); // exactly N rows a chunk
    } finally {
      backend.gemm = gemm;
    }
    expect(logitProducts).toBe(1);
    const b = run(null);
    expect(relErr(a.lp, b.lp)).toBeLessThan(1e-6);
    expect(relErr(a.ent, b.ent)).toBeLessThan(1e-6);
    expect(relErr(a.dh, b.dh)).toBeLessThan(1e-5);
    expect(relErr(a.dw, b.dw)).toBeLessThan(1e-5);
  });
});

describe('activation checkpointing', () => {
  /** Model (LoRA with dropout, or full fine-tune) and shared critic head, the same each call. */
  function build(lora: boolean) {
    const model = Transformer.init(config, 21);
    if (lora) {
      const ad = LoraAdapters.attach(model, { r: 4, alpha: 8, dropout: 0.2 }, 22);
      const rng = new Rng(23);
      for (const [, t] of ad.parameters())
        if (t.shape[1] === 4)
          t.backend.write(
            t.buf,
            Float32Array.from({ length: t.size }, () => rng.normal() * 0.1),
          );
    }
    return { model, head: ValueHead.init(config.hiddenSize, 24) };
  }

  /** Every trainable parameter's gradient of a loss over log-probs, entropy and values; and the outputs. */
  function grads(opts: { lora: boolean; checkpoint: boolean; prefix: number; chunkBytes?: number }) {
    const { model, head } = build(opts.lora);
    // rows sharing their first 6 tokens (a shared prefix when prefix > 0), of different lengths
    const rows = [
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      [1, 2, 3, 4, 5, 6, 12, 13, 14],
      [1, 2, 3, 4, 5, 6, 15, 16, 17, 18, 19, 20],
    ];
    const T = 12;
    const ids = new Int32Array(rows.length * T);
    rows.forEach((r, b) => ids.set(r, b * T));
    const packed = packTokens({ B: rows.length, T, ids, lengths: rows.map((r) => r.length) }, opts.prefix);
    expect(packed.prefix.ids.length).toBe(opts.prefix > 0 ? 5 : 0);
    const outs = tidy(() => {
      const t = tokenForward(model, packed, {
        entropy: true,
        valueHead: head,
        dropoutRng: new Rng(25),
        checkpoint: opts.checkpoint,
        ...(opts.chunkBytes ? { logitsChunkBytes: opts.chunkBytes } : {}),
      });
      let loss: Tensor | null = null;
      const parts = [t.logprobs, t.entropy, t.values, t.prefix?.logprobs, t.prefix?.entropy, t.prefix?.values];
      parts.forEach((p, i) => {
        if (!p) return;
        const term = sum(mul(p, tensor(probe(p.size, i))));
        loss = loss ? add(loss, term) : term;
      });
      (loss as unknown as Tensor).backward();
      return t.logprobs!.toFloat32Array();
    });
    const params = [...model.parameters(), ...head.parameters()];
    return { outs, grads: new Map(params.map(([n, p]) => [n, p.grad?.toFloat32Array() ?? null])) };
  }

  for (const lora of [true, false])
    for (const prefix of [0, 4])
      it(`gives every parameter the gradient of the plain graph (${lora ? 'LoRA with dropout' : 'full fine-tune'}, ${prefix ? 'shared prefix' : 'no prefix'}, chunked log-probs)`, () => {
        const plain = grads({ lora, checkpoint: false, prefix });
        const ckpt = grads({ lora, checkpoint: true, prefix, chunkBytes: 2 * 3 * 4 * config.vocabSize });
        expect(relErr(ckpt.outs, plain.outs)).toBeLessThan(1e-6);
        expect(ckpt.grads.size).toBe(plain.grads.size);
        expect(plain.grads.size).toBeGreaterThan(lora ? 40 : 30);
        for (const [name, g] of plain.grads) {
          expect(g, name).not.toBeNull();
          expect(Math.max(...g!.map(Math.abs)), name).toBeGreaterThan(0);
          expect(relErr(ckpt.grads.get(name)!, g!), name).toBeLessThan(1e-5);
        }
      });

  it.runIf(backendAvailable('wasm'))(
    "keeps less memory between forward and backward: each layer's input, not its activations",
    () => {
      setBackend('wasm');
      const { model } = build(true);
      const T = 64;
      const packed = packTokens({
        B: 2,
        T,
        ids: Int32Array.from({ length: 2 * T }, (_, i) => i % 40),
        lengths: [T, T],
      });
      const held = (checkpoint: boolean): number =>
        tidy(() => {
          const before = memoryStats().arenaInUse!;
          const t = tokenForward(model, packed, { checkpoint, dropoutRng: new Rng(1) });
          const bytes = memoryStats().arenaInUse! - before;
          sum(t.logprobs!).backward();
          for (const [, p] of model.parameters()) p.grad = null;
          return bytes;
        });
      const plain = held(false);
      const ckpt = held(true);
      // per layer: its input (B*T x C floats) instead of ~20 activations of that size and the attention probabilities
      expect(ckpt).toBeLessThan(plain / 4);
    },
  );
});
