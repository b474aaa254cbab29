// The fused decode: each decoder layer (rmsnorm, q|k|v GEMM, RoPE, cache append, attention, o_proj, rmsnorm,
// gate|up GEMM, SwiGLU, down, residuals) and the final norm + LM head run inside the backend's decode kernels
// (`Backend.decodeKernels`: wasm one call per step, native one per layer) on weights packed once per generate call.
// No Tensor objects or graph per op; the same math as Transformer.hidden(), the reference it is tested against.
import { keep, Tensor, type Backend, type DecodeKernels, type DecodeLayer } from '../tensor/index.js';
import type { FusedWeights } from './fused.js';
import type { KVCache } from './kv-cache.js';
import { argmax, type Sampler, type SamplerSettings } from './sampling.js';
import { suppressRow } from './suppress.js';
import type { Rng } from '../util/index.js';
import type { Transformer } from './transformer.js';

/**
 * Most rows (prompt tokens) one kernel call of a fused prefill takes per thread; longer prompts use the op-by-op
 * prefill.
 */
const PREFILL_ROWS = 256;

/** Whether `backend` has fused decode kernels (native and wasm; not the js reference backends). */
export function hasFastDecode(backend: Backend): boolean {
  return typeof backend.decodeKernels === 'function';
}

/** A layer's weights without its cache (the cache is given per call). */
type PackedLayer = Omit<DecodeLayer, 'keys' | 'values'>;

/** Decodes one token per sequence per `step` call, for at most `maxBatch` sequences. */
export class FastDecoder {
  private readonly owned: Tensor[] = [];
  private readonly kernels: DecodeKernels;
  private readonly layers: PackedLayer[];
  private readonly head: Tensor;
  /** Rows of the kernels' input: token embeddings, and cos | sin of their RoPE positions. */
  private readonly h: Tensor;
  private readonly tab: Tensor;
  /** cos | sin of every position 0..capacity-1 (capacity, D), gathered into tab by position. */
  private readonly ropeAll: Tensor;
  private readonly logits: Tensor;
  private readonly probs: Tensor;
  private readonly lse: Tensor;
  /** Where `sample` reads the logits or probabilities out (reused: a step's are large). */
  private readonly readOut: Float32Array;
  private rowsReady = 0;
  /** Tempered probabilities of one row (`sampleSuppressed`). */
  private tempered: Float32Array | null = null;
  private tempReady = 0;
  /** Rows of h and tab: the batch, or a prefill chunk. */
  private readonly rowCap: number;

  /** Pack the fused weights of `model` (the backend must pass `hasFastDecode`). */
  constructor(
    private readonly model: Transformer,
    fused: FusedWeights,
    readonly maxBatch: number,
    readonly capacity: number,
  ) {
    const c = model.config;
    const be = model.backend;
    if (!be.decodeKernels) throw new Error(`FastDecoder: backend ${be.name} has no fused decode kernels`);
    const { hiddenSize: C, numHeads: H, numKvHeads: K, headDim: D, intermediateSize: F, vocabSize: V } = c;
    const k = be.decodeKernels({ C, H, Hkv: K, D, F, V, eps: c.rmsNormEps }, capacity);
    this.kernels = k;
    // a prefill chunk: PREFILL_ROWS per thread (or every row the prompts can have, if fewer)
    this.rowCap = k.prefills ? Math.max(maxBatch, Math.min(maxBatch * capacity, PREFILL_ROWS * k.threads)) : maxBatch;
    const alloc = (n: number): Tensor => {
      const t = keep(Tensor.empty([n], be));
      this.owned.push(t);
      return t;
    };
    const pack = (w: Tensor, N: number, Kd: number): Tensor => {
      const out = alloc(k.packedLength(N, Kd));
      k.pack(w.buf, out.buf, N, Kd);
      return out;
    };
    const w = (name: string): Tensor => model.weights.get(name)!;
    this.layers = fused.layers.map((f, i) => {
      const p = `model.layers.${i}.`;
      return {
        inNorm: w(`${p}input_layernorm.weight`).buf,
        qkv: pack(f.qkv, (H + 2 * K) * D, C).buf,
        qkvBias: f.qkvBias?.buf ?? null,
        o: pack(f.o, C, H * D).buf,
        oBias: f.oBias?.buf ?? null,
        postNorm: w(`${p}post_attention_layernorm.weight`).buf,
        gateUp: pack(f.gateUp, 2 * F, C).buf,
        down: pack(f.down, C, F).buf,
        qNorm: c.qkNorm ? w(`${p}self_attn.q_norm.weight`).buf : null,
        kNorm: c.qkNorm ? w(`${p}self_attn.k_norm.weight`).buf : null,
      };
    });
    this.head = pack(model.lmHead, V, C);
    this.h = alloc(this.rowCap * C);
    this.tab = alloc(this.rowCap * D);
    this.logits = alloc(maxBatch * V);
    this.probs = alloc(maxBatch * V);
    this.lse = alloc(maxBatch);
    this.readOut = new Float32Array(maxBatch * V);
    const half = D / 2;
    const rope = new Float32Array(capacity * D);
    for (let i = 0; i < half; i++) {
      const inv = 1 / Math.fround(Math.pow(c.ropeTheta, Math.fround((2 * i) / D))); // as the rope op's ropeInvFreq / ropeAngle
      for (let pos = 0; pos < capacity; pos++) {
        const ang = Math.fround(pos * inv);
        rope[pos * D + i] = Math.cos(ang);
        rope[pos * D + half + i] = Math.sin(ang);
      }
    }
    this.ropeAll = alloc(capacity * D);
    be.write(this.ropeAll.buf, rope);
  }

  /**
   * Append token `ids[b]` at RoPE position `positions[b]` to each of the B sequences of `cache` (slot
   * cache.length) and compute the next-token distributions (at `temperature`; 0 = greedy): read them with `sample`.
   */
  step(
    ids: ArrayLike<number>,
    B: number,
    cache: KVCache,
    positions: Int32Array,
    keyValid: Int32Array | undefined,
    temperature: number,
  ): void {
    if (B > this.maxBatch || cache.capacity !== this.capacity || cache.length >= cache.capacity) {
      throw new RangeError(
        `FastDecoder.step: batch ${B} / cache ${cache.length} of ${cache.capacity} outside ${this.maxBatch} x ${this.capacity}`,
      );
    }
    this.setRows(
      Int32Array.from({ length: B }, (_, b) => ids[b]!),
      positions.subarray(0, B),
    );
    this.forward(B, 1, 0, cache.length, cache, keyValid, temperature);
    cache.length += 1;
    this.rowsReady = B;
    this.tempReady = temperature;
  }

  /**
   * Whether `prefill` takes prompts of (at most) `longest` tokens: kernels that prefill, and a prompt fits one call.
   */
  canPrefill(longest: number): boolean {
    return this.kernels.prefills && longest > 0 && longest <= Math.min(PREFILL_ROWS, this.capacity);
  }

  /**
   * Fill the empty `cache` with `prompts` (cache row j = prompts[j], sorted longest first; each ends at slot P = the
   * longest length, shorter ones left-padded, `keyValid` (rows, capacity) marking their real slots) and compute the
   * distributions of each row's next token, as `step` does. Chunks of consecutive rows go through `forward` with
   * each row's tokens in order; a chunk's shorter prompts are padded to its longest (token 0, masked).
   */
  prefill(
    prompts: readonly (readonly number[])[],
    cache: KVCache,
    keyValid: Int32Array | undefined,
    temperature: number,
  ): void {
    const n = prompts.length;
    const P = prompts[0]?.length ?? 0;
    if (!this.canPrefill(P) || n > this.maxBatch || cache.capacity !== this.capacity || cache.length !== 0) {
      throw new RangeError(
        `FastDecoder.prefill: ${n} prompts of up to ${P} tokens into a cache at ${cache.length} of ${cache.capacity}`,
      );
    }
    for (let j0 = 0; j0 < n;) {
      const T = prompts[j0]!.length;
      const seqs = Math.max(1, Math.min(n - j0, Math.floor(this.rowCap / T)));
      const ids = new Int32Array(seqs * T),
        positions = new Int32Array(seqs * T);
      for (let j = 0; j < seqs; j++) {
        const prompt = prompts[j0 + j]!,
          pad = T - prompt.length;
        for (let t = pad; t < T; t++) {
          ids[j * T + t] = prompt[t - pad]!;
          positions[j * T + t] = t - pad;
        }
      }
      this.setRows(ids, positions);
      this.forward(seqs * T, T, j0, P - T, cache, keyValid, temperature);
      j0 += seqs;
    }
    cache.length = P;
    this.rowsReady = n;
    this.tempReady = temperature;
  }

  /**
   * Rows of h = the embeddings of `ids`, rows of the RoPE table = the angles of `positions` (gathers, as embedding
   * lookups).
   */
  private setRows(ids: Int32Array, positions: Int32Array): void {
    const be = this.model.backend,
      c = this.model.config;
    be.embedding(this.model.weights.get('model.embed_tokens.weight')!.buf, ids, this.h.buf, c.hiddenSize);
    be.embedding(this.ropeAll.buf, positions, this.tab.buf, c.headDim);
  }

  /**
   * Rows [0, rows) of h (T tokens of each of the sequences seq0.. of `cache`, from slot `start`) through every layer,
   * then each sequence's last row through the head into rows seq0.. of the logits, probs and lse.
   */
  private forward(
    rows: number,
    T: number,
    seq0: number,
    start: number,
    cache: KVCache,
    keyValid: Int32Array | undefined,
    temperature: number,
  ): void {
    this.kernels.run({
      layers: this.layers.map((l, i) => ({ ...l, keys: cache.keys[i]!.buf, values: cache.values[i]!.buf })),
      norm: this.model.weights.get('model.norm.weight')!.buf,
      head: this.head.buf,
      h: this.h.buf,
      rope: this.tab.buf,
      keyValid: keyValid ?? null,
      rows,
      T,
      seq0,
      start,
      logits: this.logits.buf,
      probs: this.probs.buf,
      lse: this.lse.buf,
      invTemp: temperature === 0 ? 0 : 1 / temperature,
    });
  }

  /** Tokens of the last `step` (greedy, or drawn after top-k / top-p) and their log-probs at temperature 1. */
  sample(
    sampler: Sampler,
    settings: SamplerSettings,
    rngs: readonly Rng[],
  ): { tokens: Int32Array; logprobs: Float32Array } {
    const B = this.rowsReady;
    const V = this.model.config.vocabSize;
    if (rngs.length !== B) throw new RangeError(`FastDecoder.sample: ${rngs.length} generators for ${B} rows`);
    const suppressed = this.model.suppressedTokens;
    if (suppressed) return this.sampleSuppressed(suppressed, sampler, settings, rngs);
    const be = this.model.backend;
    const lse = be.read(this.lse.buf, 0, B);
    const tokens = new Int32Array(B);
    const logprobs = new Float32Array(B);
    if (this.tempReady === 0) {
      const z = be.read(this.logits.buf, 0, B * V, this.readOut);
      for (let b = 0; b < B; b++) {
        const tok = argmax(z, b * V, V);
        tokens[b] = tok;
        logprobs[b] = z[b * V + tok]! - lse[b]!;
      }
    } else {
      const probs = be.read(this.probs.buf, 0, B * V, this.readOut);
      for (let b = 0; b < B; b++) {
        const tok = sampler.pick(probs, b * V, settings, rngs[b]!, true);
        tokens[b] = tok;
        logprobs[b] = be.read(this.logits.buf, b * V + tok, 1)[0]! - lse[b]!;
      }
    }
    return { tokens, logprobs };
  }

  /**
   * `sample` for a model with suppressed tokens (a VLM's vision tokens): the logits read out, those ids set to
   * SUPPRESSED_LOGIT, and the distribution (at the temperature, and at 1 for the log-prob) taken here without them.
   */
  private sampleSuppressed(
    ids: Int32Array,
    sampler: Sampler,
    settings: SamplerSettings,
    rngs: readonly Rng[],
  ): { tokens: Int32Array; logprobs: Float32Array } {
    const B = this.rowsReady;
    const V = this.model.config.vocabSize;
    const z = this.model.backend.read(this.logits.buf, 0, B * V, this.readOut);
    const probs = (this.tempered ??= new Float32Array(V));
    const tokens = new Int32Array(B);
    const logprobs = new Float32Array(B);
    for (let b = 0; b < B; b++) {
      const o = b * V;
      suppressRow(z, o, ids);
      let max = -Infinity;
      for (let i = 0; i < V; i++) max = Math.max(max, z[o + i]!);
      let sum = 0;
      for (let i = 0; i < V; i++) sum += Math.exp(z[o + i]! - max);
      if (this.tempReady === 0) tokens[b] = argmax(z, o, V);
      else {
        for (let i = 0; i < V; i++) probs[i] = Math.exp((z[o + i]! - max) / this.tempReady);
        tokens[b] = sampler.pick(probs, 0, settings, rngs[b]!, false);
      }
      logprobs[b] = z[o + tokens[b]!]! - max - Math.log(sum);
    }
    return { tokens, logprobs };
  }

  dispose(): void {
    this.kernels.dispose();
    for (const t of this.owned) t.dispose();
  }
}
