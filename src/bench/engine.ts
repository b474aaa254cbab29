// The engine benchmark's workload (issue 3 "Speed"): one reference model, a training step (forward +
// backward + AdamW on B8 x T128) and batched KV-cached decode (64 sequences, 64-token prompts, 128 new tokens).
import { modelConfig, type ModelConfig } from '../model/index.js';
import { fmaPeak, simdPeak, type BackendName } from '../tensor/index.js';
import { Rng } from '../util/index.js';
import { LocalEngine, sequenceBatch } from '../engine/index.js';
import type { ForwardResult, OutputGradients, SequenceBatch } from '../engine/index.js';

/** The reference model: vocab 2048, hidden 256, 6 layers, 4 heads (2 KV), intermediate 768, RoPE, tied embeddings. */
export const BENCH_MODEL: ModelConfig = modelConfig({
  modelType: 'qwen2',
  vocabSize: 2048,
  hiddenSize: 256,
  intermediateSize: 768,
  numLayers: 6,
  numHeads: 4,
  numKvHeads: 2,
  tieWordEmbeddings: true,
});

/** Sizes of the workload (the defaults are the issue's). */
export interface BenchWorkload {
  batch: number;
  seq: number;
  steps: number;
  decodeBatch: number;
  prompt: number;
  newTokens: number;
}

export const DEFAULT_WORKLOAD: BenchWorkload = {
  batch: 8,
  seq: 128,
  steps: 5,
  decodeBatch: 64,
  prompt: 64,
  newTokens: 128,
};

/** What one process measured. */
export interface EngineBenchResult {
  /** Median wall time of a training step, ms (after one warm-up step). */
  trainStepMs: number;
  /** New tokens per second of batched decode, prefill included. */
  decodeTokPerS: number;
  /** Peak resident set size of the process, MB. */
  peakRssMb: number;
  /** Final training loss (a sanity check: finite, near log V at init). */
  loss: number;
  /** wasm only: one thread's f32x4 multiply-add rate, GFLOP/s (`simdPeak`), and the threads the kernels use. */
  simd?: { gflopsPerThread: number; threads: number } | undefined;
  /**
   * native only: one thread's float32 FMA rate on the widest path the kernels take here (`fmaPeak`, of the thread's
   * own CPU time, so other load does not lower it), that path, and the threads the kernels use.
   */
  fma?: { gflopsPerThread: number; threads: number; isa: string } | undefined;
}

/**
 * FLOPs of the training step's matrix products, the ones it needs: forward (q/k/v/o, MLP, scores and weighted values
 * over the whole T x T square, LM head) and backward (twice the forward). Elementwise work and the optimizer are left
 * out, so `flops / rate` is a lower bound on the time.
 */
export function trainStepFlops(c: ModelConfig, w: BenchWorkload): number {
  const { hiddenSize: C, numHeads: H, numKvHeads: K, headDim: D, intermediateSize: F, vocabSize: V } = c;
  const linear = C * (H + 2 * K) * D + H * D * C + 3 * C * F;
  const attention = 2 * H * w.seq * D;
  const perToken = c.numLayers * (linear + attention) + C * V;
  return 3 * 2 * w.batch * w.seq * perToken;
}

/**
 * FLOPs of the decode workload's products with the weights, the ones it needs: the prefill (every prompt token through
 * every layer but the last, of which the earlier tokens need only the key and value projections (the cache), the last
 * token through all of it and the LM head) and the newTokens - 1 decode steps (layers + LM head). Attention and
 * elementwise work are left out, so this is a lower bound on the work and `flops / rate` a lower bound on the time.
 */
export function decodeWeightFlops(c: ModelConfig, w: BenchWorkload): number {
  const { hiddenSize: C, numHeads: H, numKvHeads: K, headDim: D, intermediateSize: F, vocabSize: V } = c;
  const layer = C * (H + 2 * K) * D + H * D * C + 3 * C * F;
  const layers = c.numLayers * layer;
  const kv = C * 2 * K * D;
  const prefill = w.decodeBatch * ((w.prompt - 1) * (layers - layer + kv) + layers + C * V);
  const steps = w.decodeBatch * (w.newTokens - 1) * (layers + C * V);
  return 2 * (prefill + steps);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The train step's batch: `w.batch` random sequences of `w.seq` + 1 tokens (from `rng`), and the gradient of the mean
 * cross-entropy over every scored token (t >= 1): d loss / d logprob = -1 / n.
 */
export function trainBatch(
  w: BenchWorkload,
  vocabSize: number,
  rng: Rng,
): { seqs: SequenceBatch; n: number; grad: (out: ForwardResult) => OutputGradients } {
  const seqs = sequenceBatch(
    Array.from({ length: w.batch }, () => Array.from({ length: w.seq + 1 }, () => rng.int(vocabSize))),
  );
  const n = w.batch * w.seq;
  return { seqs, n, grad: (out) => ({ logprobs: out.logprobs.map((_, i) => (i % seqs.T > 0 ? -1 / n : 0)) }) };
}

/** Run the workload on `backend` in this process. */
export async function runEngineBench(
  backend: BackendName,
  w: BenchWorkload = DEFAULT_WORKLOAD,
  config: ModelConfig = BENCH_MODEL,
): Promise<EngineBenchResult> {
  const engine = LocalEngine.create(config, { backend, seed: 0 });
  const rng = new Rng(0);
  const V = config.vocabSize;
  const batch = trainBatch(w, V, rng);
  const { seqs, n } = batch;
  let loss = NaN;
  const grad = (out: ForwardResult): OutputGradients => {
    loss = -out.logprobs.reduce((a, x) => a + x, 0) / n;
    return batch.grad(out);
  };
  const times: number[] = [];
  for (let step = 0; step <= w.steps; step++) {
    const t0 = performance.now();
    await engine.backward(seqs, { role: 'policy' }, grad);
    await engine.optimizerStep('policy', { lr: 1e-4, weightDecay: 0.01 });
    if (step > 0) times.push(performance.now() - t0);
  }
  const prompts = Array.from({ length: w.decodeBatch }, () => Array.from({ length: w.prompt }, () => rng.int(V)));
  // warm-up with the timed call's shapes (an RL loop's steady state: its KV cache and buffers already allocated)
  await engine.generate(prompts, { maxNewTokens: w.newTokens, temperature: 1, seed: 1 });
  const t0 = performance.now();
  const gens = await engine.generate(prompts, { maxNewTokens: w.newTokens, temperature: 1, seed: 2 });
  const dt = (performance.now() - t0) / 1000;
  const tokens = gens.reduce((a, g) => a + g.tokens.length, 0);
  engine.dispose();
  const simd = backend === 'wasm' ? simdPeak() : null;
  const fma = backend === 'native' ? fmaPeak() : null;
  return {
    trainStepMs: median(times),
    decodeTokPerS: tokens / dt,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    loss,
    ...(simd ? { simd } : {}),
    ...(fma ? { fma } : {}),
  };
}
