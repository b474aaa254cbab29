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
    /** @internal existing storage to take (`compact`): a fresh zeroed cache without it. */
    from?: { keys: Tensor[]; values: Tensor[] },
  ) {
    const shape = [batch, config.numKvHeads, capacity, config.headDim];
    this.keys = from?.keys ?? [];
    this.values = from?.values ?? [];
    if (from) return;
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

  /**
   * A cache holding only the sequences `rows` (ascending), in this one's storage: row j takes row rows[j] in place
   * (rows[j] >= j, so no row is overwritten before it is read) and the new cache views the first rows.length rows, so
   * finishing sequences never hold a second cache. This cache is disposed; the storage lives on in the new one.
   */
  compact(rows: readonly number[]): KVCache {
    if (!rows.every((r, j) => Number.isInteger(r) && r >= 0 && r < this.batch && (j === 0 || r > rows[j - 1]!)))
      throw new RangeError(`KVCache.compact: rows must ascend within [0, ${this.batch}), got [${rows.join(', ')}]`);
    const { numKvHeads: K, headDim: D } = this.config;
    const block = K * this.capacity * D;
    noGrad(() => {
      for (const t of [...this.keys, ...this.values])
        rows.forEach((r, j) => {
          // only the filled slots: K rows of length * D, strided by capacity * D
          if (r !== j)
            t.backend.copyBlock(
              t.buf,
              r * block,
              this.capacity * D,
              t.buf,
              j * block,
              this.capacity * D,
              K,
              this.length * D,
              false,
            );
        });
    });
    const next = new KVCache(this.config, rows.length, this.capacity, {
      keys: this.keys.map((t) => keep(t.narrowRows(rows.length))),
      values: this.values.map((t) => keep(t.narrowRows(rows.length))),
    });
    next.length = this.length;
    this.dispose();
    return next;
  }

  /** Bytes held (float32). */
  get bytes(): number {
    return this.batch * this.capacity * KVCache.bytesPerToken(this.config);
  }

  /** Bytes of keys and values one token takes in a cache of `config`'s model (float32, every layer). */
  static bytesPerToken(config: ModelConfig): number {
    return 2 * config.numLayers * config.numKvHeads * config.headDim * 4;
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
  }
}
