// Seeded pseudo-random numbers: xoshiro128** seeded through splitmix32.
// Everything random in ragen-ts (env generation, slipping, sampling) draws from one of these, never Math.random.

/** A small, fast, seedable PRNG (xoshiro128**). Same seed -> same sequence on every platform. */
export class Rng {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(seed = 0) {
    this.seed(seed);
  }

  /** Re-seed in place. Any safe integer (negative, or above 2^32) is accepted. */
  seed(seed: number): void {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`Rng seed must be a safe integer, got ${seed}`);
    let x = (seed >>> 0) ^ Math.imul(Math.floor(seed / 4294967296) >>> 0, 0x9e3779b1);
    const next = (): number => {
      // splitmix32
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A uniform float in [0, 1) with 32 bits of randomness. */
  random(): number {
    return this.nextUint32() / 4294967296;
  }

  /** A uniform integer in [0, n). */
  int(n: number): number {
    if (!(n >= 1) || !Number.isFinite(n)) throw new RangeError(`Rng.int(n) needs n >= 1, got ${n}`);
    return Math.floor(this.random() * n);
  }

  /** A uniform integer in [lo, hi] (both inclusive). */
  intBetween(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  /** One element of a non-empty array. */
  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Rng.choice: the array is empty');
    return items[this.int(items.length)]!;
  }

  /** Shuffle in place (Fisher-Yates) and return the array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i]!;
      items[i] = items[j]!;
      items[j] = tmp;
    }
    return items;
  }

  /** A standard normal sample (Box-Muller). */
  normal(): number {
    let u = 0;
    while (u === 0) u = this.random();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.random());
  }

  /** The generator's full state, for checkpoints. */
  getState(): [number, number, number, number] {
    return [this.s0, this.s1, this.s2, this.s3];
  }

  /** Restore a state returned by `getState`. */
  setState(state: readonly number[]): void {
    if (state.length !== 4) throw new RangeError(`Rng.setState needs 4 numbers, got ${state.length}`);
    [this.s0, this.s1, this.s2, this.s3] = state.map((v) => v | 0) as [number, number, number, number];
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
