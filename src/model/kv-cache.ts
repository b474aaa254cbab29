// A preallocated key/value cache for batched decoding: per layer (B, Hkv, capacity, D), written in place.
// Decode is bandwidth-bound on this cache, so it is allocated once and compacted (not regrown) as sequences finish.
import { keep, noGrad, Tensor } from '../tensor/index.js';
import type { ModelConfig } from './config.js';

export class KVCache {
  readonly keys: Tensor[];
  readonly values: Tensor[];
  /** Cache slots filled so far (the same for every sequence: prompts are left-padded). */
  length = 0;

  constructor(readonly config: ModelConfig, readonly batch: number, readonly capacity: number) {
    const shape = [batch, config.numKvHeads, capacity, config.headDim];
    this.keys = [];
    this.values = [];
    for (let i = 0; i < config.numLayers; i++) {
      this.keys.push(keep(Tensor.empty(shape)));
      this.values.push(keep(Tensor.empty(shape)));
    }
  }

  /** A new cache holding only the sequences `rows` (in that order); this one is disposed. */
  compact(rows: readonly number[]): KVCache {
    const next = new KVCache(this.config, rows.length, this.capacity);
    next.length = this.length;
    const { numKvHeads: K, headDim: D } = this.config;
    const block = K * this.capacity * D;
    noGrad(() => {
      for (let i = 0; i < this.keys.length; i++) {
        for (const [srcs, dsts] of [[this.keys, next.keys], [this.values, next.values]] as const) {
          const src = srcs[i]!;
          const be = src.backend;
          // only the filled slots: K rows of length * D, strided by capacity * D
          rows.forEach((r, j) => be.copyBlock(src.buf, r * block, this.capacity * D, dsts[i]!.buf, j * block, this.capacity * D, K, this.length * D, false));
        }
      }
    });
    this.dispose();
    return next;
  }

  /** Bytes held (float32). */
  get bytes(): number {
    return 2 * this.keys.length * this.batch * this.config.numKvHeads * this.capacity * this.config.headDim * 4;
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
  }
}
