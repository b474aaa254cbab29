// A preallocated key/value cache for batched decoding: per layer (B, Hkv, capacity, D), written in place.
// Decode is bandwidth-bound on this cache, so it is allocated once and compacted (not regrown) as sequences finish.
import { keep, noGrad, Tensor } from '../tensor/index.js';
import type { ModelConfig } from './config.js';

export class KVCache {
  readonly keys: Tensor[];
  readonly values: Tensor[];
  /** Cache slots filled so far (the same for every sequence: prompts are left-padded). */
  length = 0;

  constructor(
    readonly config: ModelConfig,
    readonly batch: number,
    readonly capacity: number,
  ) {
    const shape = [batch, config.numKvHeads, capacity, config.headDim];
    this.keys = [];
    this.values = [];
    for (let i = 0; i < config.numLayers; i++) {
      // zeroed: masked and not-yet-written slots still meet a 0 attention weight, and 0 * NaN would poison it
      for (const list of [this.keys, this.values]) {
        const t = keep(Tensor.empty(shape));
        t.backend.fill(t.buf, 0);
        list.push(t);
      }
    }
  }

  /** Copy `src`'s filled slots (every row, slots [0, src.length)) into rows row0.. of this cache at slot `slot0`. */
  writeRows(src: KVCache, row0: number, slot0: number): void {
    const { numKvHeads: K, headDim: D } = this.config;
    if (row0 + src.batch > this.batch || slot0 + src.length > this.capacity) {
      throw new RangeError(
        `KVCache.writeRows: ${src.batch} rows x ${src.length} slots do not fit at row ${row0}, slot ${slot0} of ${this.batch} x ${this.capacity}`,
      );
    }
    for (let i = 0; i < this.keys.length; i++) {
      for (const [srcs, dsts] of [
        [src.keys, this.keys],
        [src.values, this.values],
      ] as const) {
        const be = dsts[i]!.backend;
        for (let r = 0; r < src.batch; r++) {
          be.copyBlock(
            srcs[i]!.buf,
            r * K * src.capacity * D,
            src.capacity * D,
            dsts[i]!.buf,
            ((row0 + r) * K * this.capacity + slot0) * D,
            this.capacity * D,
            K,
            src.length * D,
            false,
          );
        }
      }
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
        for (const [srcs, dsts] of [
          [this.keys, next.keys],
          [this.values, next.values],
        ] as const) {
          const src = srcs[i]!;
          const be = src.backend;
          // only the filled slots: K rows of length * D, strided by capacity * D
          rows.forEach((r, j) =>
            be.copyBlock(
              src.buf,
              r * block,
              this.capacity * D,
              dsts[i]!.buf,
              j * block,
              this.capacity * D,
              K,
              this.length * D,
              false,
            ),
          );
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
