// The fused decode step of the native and wasm backends: one kernel call per layer (rmsnorm, q|k|v GEMM, RoPE, cache
// append, attention, o_proj, rmsnorm, gate|up GEMM, SwiGLU, down, residuals) on weights packed once per
// generate call, then one for the final norm + LM head (wasm: all of it in one call, and prompts prefilled the same
// way). No Tensor objects or graph per op; same math as hidden().
import { keep, Tensor, type Backend } from '../tensor/index.js';
import type { FusedWeights } from './fused.js';
import type { KVCache } from './kv-cache.js';
import { argmax, type Sampler, type SamplerSettings } from './sampling.js';
import type { Rng } from '../util/index.js';
import type { Transformer } from './transformer.js';

/** The decode kernels (native/decode.inc, or assembly/decode.ts); pointers are arena byte addresses, 0 = none. */
interface DecodeKernels {
  decodePack(w: number, out: number, N: number, K: number): void;
  decodeLayer(...args: number[]): void;
  decodeHead(h: number, scratch: number, norm: number, head: number, logits: number, B: number, C: number, V: number, eps: number, probs: number, lse: number, invTemp: number): void;
  /** wasm: every layer and the head in one call (pointers of each layer in a descriptor). */
  decodeStep?(...args: number[]): void;
}

/** What this file needs of the wasm / native backends: their arena, kernels, addon and the wasm worker. */
interface ArenaBackend {
  arena: { f32: Float32Array; i32: Int32Array };
  k?: Partial<DecodeKernels>;
  addon?: Partial<DecodeKernels> & { setMemory(view: Float32Array): void };
  pool?: { run(fn: string, argsMain: number[], argsWorker: number[]): void } | null;
}

const ptr = (t: Tensor): number => (t.buf as unknown as { ptr: number }).ptr;
/** The address of an optional tensor, 0 for none. */
const optPtr = (t: Tensor | null): number => (t ? ptr(t) : 0);
const PANEL = 16; // the widest panel of either kernel set (native 16 columns, wasm 8)

const complete = (k: Partial<DecodeKernels> | undefined): k is DecodeKernels =>
  typeof k?.decodeLayer === 'function' && typeof k.decodePack === 'function' && typeof k.decodeHead === 'function';

/**
 * The native addon's decode kernels (which split rows over two threads themselves), else the wasm module's with
 * the backend's worker (rows split here), else none (js backend, or kernels built before them).
 */
function kernelsOf(backend: Backend): { k: DecodeKernels; setMemory?: (view: Float32Array) => void; pool?: ArenaBackend['pool'] } | null {
  const be = backend as unknown as ArenaBackend;
  if (backend.name === 'native' && complete(be.addon)) return { k: be.addon, setMemory: (v) => be.addon!.setMemory(v) };
  if ((backend.name === 'native' || backend.name === 'wasm') && complete(be.k)) return { k: be.k, pool: be.pool };
  return null;
}

/** Multiply-adds of a layer below which one thread does all rows (the hand-off would cost more; as the addon). */
const SPLIT_FLOPS = 2 ** 21;
/** Pointers per layer in decodeStep's descriptor (assembly/decode.ts). */
const DESC = 12;
/** Most rows (prompt tokens) one kernel call of a fused prefill takes per thread; longer prompts use the op-by-op prefill. */
const PREFILL_ROWS = 256;

/** Whether `backend` has the fused decode kernels (the native addon or the wasm module, rebuilt with them). */
export function hasFastDecode(backend: Backend): boolean {
  return kernelsOf(backend) !== null;
}

interface PackedLayer {
  inNorm: Tensor;
  qkv: Tensor;
  qkvBias: Tensor | null;
  o: Tensor;
  oBias: Tensor | null;
  postNorm: Tensor;
  gateUp: Tensor;
  down: Tensor;
  qNorm: Tensor | null;
  kNorm: Tensor | null;
}

/** Decodes one token per sequence per `step` call, for at most `maxBatch` sequences. */
export class FastDecoder {
  private readonly owned: Tensor[] = [];
  private readonly layers: PackedLayer[];
  private readonly head: Tensor;
  private readonly h: Tensor;
  private readonly scratch: Tensor;
  /** The wasm worker's scratch when rows are split over two threads. */
  private readonly workerScratch: Tensor | null;
  private readonly pool: ArenaBackend['pool'];
  private readonly tab: Tensor;
  private readonly valid: Tensor;
  private readonly logits: Tensor;
  private readonly probs: Tensor;
  private readonly lse: Tensor;
  /** decodeStep's descriptor: DESC pointers per layer. */
  private readonly desc: Tensor;
  private rowsReady = 0;
  private tempReady = 0;
  /** cos | sin of every position 0..capacity-1 (capacity, D). */
  private readonly ropeAll: Float32Array;
  private readonly arena: ArenaBackend['arena'];
  private readonly k: DecodeKernels;
  private readonly setMemory: ((view: Float32Array) => void) | undefined;
  /** The kernels have the one-call step (wasm), which also takes whole prompts (see `prefill`). */
  private readonly prefills: boolean;
  /** Rows of h, tab and each thread's scratch: the batch, or a prefill chunk. */
  private readonly rowCap: number;
  private memBytes = -1;
  private validFor: Int32Array | undefined | null = null;

  /** Pack the fused weights of `model` (the backend must pass `hasFastDecode`). */
  constructor(private readonly model: Transformer, fused: FusedWeights, readonly maxBatch: number, readonly capacity: number) {
    const c = model.config;
    const be = model.backend;
    const kernels = kernelsOf(be);
    if (!kernels) throw new Error(`FastDecoder: backend ${be.name} has no fused decode kernels`);
    this.k = kernels.k;
    this.setMemory = kernels.setMemory;
    this.pool = kernels.pool;
    this.prefills = typeof this.k.decodeStep === 'function';
    // a prefill chunk: PREFILL_ROWS per thread (or every row the prompts can have, if fewer)
    this.rowCap = this.prefills ? Math.max(maxBatch, Math.min(maxBatch * capacity, PREFILL_ROWS * (this.pool ? 2 : 1))) : maxBatch;
    this.arena = (be as unknown as ArenaBackend).arena;
    const { hiddenSize: C, numHeads: H, numKvHeads: K, headDim: D, intermediateSize: F, vocabSize: V } = c;
    const alloc = (n: number): Tensor => {
      const t = keep(Tensor.empty([n], be));
      this.owned.push(t);
      return t;
    };
    this.sync();
    const pack = (w: Tensor, N: number, Kd: number): Tensor => {
      const out = alloc(Math.ceil(N / PANEL) * PANEL * Kd);
      this.sync();
      this.k.decodePack(ptr(w), ptr(out), N, Kd);
      return out;
    };
    const w = (name: string): Tensor => model.weights.get(name)!;
    this.layers = fused.layers.map((f, i) => {
      const p = `model.layers.${i}.`;
      return {
        inNorm: w(`${p}input_layernorm.weight`),
        qkv: pack(f.qkv, (H + 2 * K) * D, C),
        qkvBias: f.qkvBias,
        o: pack(f.o, C, H * D),
        oBias: f.oBias,
        postNorm: w(`${p}post_attention_layernorm.weight`),
        gateUp: pack(f.gateUp, 2 * F, C),
        down: pack(f.down, C, F),
        qNorm: c.qkNorm ? w(`${p}self_attn.q_norm.weight`) : null,
        kNorm: c.qkNorm ? w(`${p}self_attn.k_norm.weight`) : null,
      };
    });
    this.head = pack(model.lmHead, V, C);
    const R = this.rowCap;
    this.h = alloc(R * C);
    // wasm: x, qkv, y, gate|up, act, attention scores, then the GEMMs' packed input, 4 floats of alignment and a 4 x 8 tile
    const scratchFloats = R * (C + (H + 2 * K) * D + H * D + 3 * F) + H * capacity + (R + 3) * Math.max(C, H * D, F) + 4 + 32;
    this.scratch = alloc(scratchFloats);
    this.workerScratch = this.pool ? alloc(scratchFloats) : null;
    this.tab = alloc(R * D);
    this.valid = alloc(maxBatch * capacity);
    this.logits = alloc(maxBatch * V);
    this.probs = alloc(maxBatch * V);
    this.lse = alloc(maxBatch);
    this.desc = alloc(fused.layers.length * DESC);
    this.layers.forEach((l, i) => {
      // read back as u32; the cache's keys and values (slots 8, 9) are set per call
      const ptrs = [ptr(l.inNorm), ptr(l.qkv), optPtr(l.qkvBias), ptr(l.o), optPtr(l.oBias), ptr(l.postNorm), ptr(l.gateUp), ptr(l.down), 0, 0, optPtr(l.qNorm), optPtr(l.kNorm)];
      this.arena.i32.set(ptrs, (ptr(this.desc) >>> 2) + i * DESC);
    });
    const half = D / 2;
    this.ropeAll = new Float32Array(capacity * D);
    for (let i = 0; i < half; i++) {
      const inv = 1 / Math.fround(Math.pow(c.ropeTheta, Math.fround((2 * i) / D))); // as the rope op's ropeInvFreq / ropeAngle
      for (let pos = 0; pos < capacity; pos++) {
        const ang = Math.fround(pos * inv);
        this.ropeAll[pos * D + i] = Math.cos(ang);
        this.ropeAll[pos * D + half + i] = Math.sin(ang);
      }
    }
  }

  /** Re-point the addon at the arena after it grew. */
  private sync(): void {
    const f32 = this.arena.f32;
    if (this.setMemory && f32.byteLength !== this.memBytes) {
      this.setMemory(f32);
      this.memBytes = f32.byteLength;
    }
  }

  /**
   * Append token `ids[b]` at RoPE position `positions[b]` to each of the B sequences of `cache` (slot
   * cache.length) and compute the next-token distributions (at `temperature`; 0 = greedy): read them with `sample`.
   */
  step(ids: ArrayLike<number>, B: number, cache: KVCache, positions: Int32Array, keyValid: Int32Array | undefined, temperature: number): void {
    if (B > this.maxBatch || cache.capacity !== this.capacity || cache.length >= cache.capacity) {
      throw new RangeError(`FastDecoder.step: batch ${B} / cache ${cache.length} of ${cache.capacity} outside ${this.maxBatch} x ${this.capacity}`);
    }
    this.sync();
    this.setRows(B, (b) => ids[b]!, (b) => positions[b]!);
    this.forward(B, 1, 0, cache.length, cache, keyValid, temperature);
    cache.length += 1;
    this.rowsReady = B;
    this.tempReady = temperature;
  }

  /** Whether `prefill` takes prompts of (at most) `longest` tokens: wasm kernels, and a prompt fits one call. */
  canPrefill(longest: number): boolean {
    return this.prefills && longest > 0 && longest <= Math.min(PREFILL_ROWS, this.capacity);
  }

  /**
   * Fill the empty `cache` with `prompts` (cache row j = prompts[j], sorted longest first; each ends at slot P = the
   * longest length, shorter ones left-padded, `keyValid` (rows, capacity) marking their real slots) and compute the
   * distributions of each row's next token, as `step` does. Chunks of consecutive rows go through `forward` with
   * each row's tokens in order; a chunk's shorter prompts are padded to its longest (token 0, masked).
   */
  prefill(prompts: readonly (readonly number[])[], cache: KVCache, keyValid: Int32Array | undefined, temperature: number): void {
    const n = prompts.length;
    const P = prompts[0]?.length ?? 0;
    if (!this.canPrefill(P) || n > this.maxBatch || cache.capacity !== this.capacity || cache.length !== 0) {
      throw new RangeError(`FastDecoder.prefill: ${n} prompts of up to ${P} tokens into a cache at ${cache.length} of ${cache.capacity}`);
    }
    this.sync();
    for (let j0 = 0; j0 < n; ) {
      const T = prompts[j0]!.length;
      const seqs = Math.max(1, Math.min(n - j0, Math.floor(this.rowCap / T)));
      const pad = (j: number): number => T - prompts[j0 + j]!.length;
      this.setRows(seqs * T, (r) => {
        const j = Math.floor(r / T), t = (r % T) - pad(j);
        return t >= 0 ? prompts[j0 + j]![t]! : 0;
      }, (r) => Math.max(0, (r % T) - pad(Math.floor(r / T))));
      this.forward(seqs * T, T, j0, P - T, cache, keyValid, temperature);
      j0 += seqs;
    }
    cache.length = P;
    this.rowsReady = n;
    this.tempReady = temperature;
  }

  /** Rows [0, rows) of h = the embeddings of `id(r)`, of the RoPE table = the angles of `position(r)`. */
  private setRows(rows: number, id: (r: number) => number, position: (r: number) => number): void {
    const { hiddenSize: C, headDim: D } = this.model.config;
    const f32 = this.arena.f32;
    const emb = ptr(this.model.weights.get('model.embed_tokens.weight')!) >>> 2;
    const h0 = ptr(this.h) >>> 2, t0 = ptr(this.tab) >>> 2;
    for (let r = 0; r < rows; r++) {
      const i = id(r), pos = position(r);
      f32.copyWithin(h0 + r * C, emb + i * C, emb + (i + 1) * C);
      f32.set(this.ropeAll.subarray(pos * D, (pos + 1) * D), t0 + r * D);
    }
  }

  /**
   * Rows [0, rows) of h (T tokens of each of the sequences seq0.. of `cache`, from slot `start`) through every layer,
   * then each sequence's last row through the head into rows seq0.. of the logits, probs and lse. With wasm's
   * decodeStep each thread takes its sequences through the whole step in one call (no hand-off between layers);
   * the addon (T = 1, seq0 = 0: it decodes, never prefills) runs a call per layer and one for the head.
   */
  private forward(rows: number, T: number, seq0: number, start: number, cache: KVCache, keyValid: Int32Array | undefined, temperature: number): void {
    const c = this.model.config;
    const { hiddenSize: C, numHeads: H, numKvHeads: K, headDim: D, intermediateSize: F, vocabSize: V } = c;
    if (keyValid && keyValid !== this.validFor) this.arena.i32.set(keyValid, ptr(this.valid) >>> 2);
    this.validFor = keyValid;
    const cap = cache.capacity, scale = 1 / Math.sqrt(D);
    const invTemp = temperature === 0 ? 0 : 1 / temperature;
    const norm = ptr(this.model.weights.get('model.norm.weight')!);
    if (this.k.decodeStep) {
      const i32 = this.arena.i32, d0 = ptr(this.desc) >>> 2;
      this.layers.forEach((_, i) => {
        i32[d0 + i * DESC + 8] = ptr(cache.keys[i]!);
        i32[d0 + i * DESC + 9] = ptr(cache.values[i]!);
      });
      const layerFlops = 2 * rows * (C * (H + 2 * K) * D + H * D * C + 3 * C * F);
      this.onRows(rows, layerFlops, T, (r0, r1, scratch) => {
        const s = seq0 + r0 / T; // first sequence of these rows
        return [
          ptr(this.desc), this.layers.length, ptr(this.h) + 4 * r0 * C, scratch, ptr(this.tab) + 4 * r0 * D, keyValid ? ptr(this.valid) + 4 * s * cap : 0,
          4 * s * K * cap * D, r1 - r0, C, H, K, D, F, cap, start, c.rmsNormEps, scale, T,
          norm, ptr(this.head), ptr(this.logits) + 4 * s * V, V, ptr(this.probs) + 4 * s * V, ptr(this.lse) + 4 * s, invTemp,
        ];
      });
      return;
    }
    const valid = keyValid ? ptr(this.valid) : 0;
    this.layers.forEach((l, i) => {
      this.k.decodeLayer(ptr(this.h), ptr(this.scratch), ptr(l.inNorm), ptr(l.qkv), optPtr(l.qkvBias), ptr(l.o), optPtr(l.oBias), ptr(l.postNorm), ptr(l.gateUp),
        ptr(l.down), ptr(cache.keys[i]!), ptr(cache.values[i]!), ptr(this.tab), optPtr(l.qNorm), optPtr(l.kNorm), valid, rows, C, H, K, D, F, cap, start, c.rmsNormEps, scale);
    });
    this.k.decodeHead(ptr(this.h), ptr(this.scratch), norm, ptr(this.head), ptr(this.logits), rows, C, V, c.rmsNormEps, ptr(this.probs), ptr(this.lse), invTemp);
  }

  /**
   * decodeStep over rows [0, B), in blocks of `unit` rows (a sequence's tokens) that stay on one thread: with the
   * worker, it takes the second half of the blocks.
   */
  private onRows(B: number, flops: number, unit: number, args: (r0: number, r1: number, scratch: number) => number[]): void {
    const half = ((B / unit) >> 1) * unit;
    if (!this.pool || half === 0 || flops < SPLIT_FLOPS) {
      this.k.decodeStep!(...args(0, B, ptr(this.scratch)));
      return;
    }
    this.pool.run('decodeStep', args(0, half, ptr(this.scratch)), args(half, B, ptr(this.workerScratch!)));
  }

  /** Tokens of the last `step` (greedy, or drawn after top-k / top-p) and their log-probs at temperature 1. */
  sample(sampler: Sampler, settings: SamplerSettings, rngs: readonly Rng[]): { tokens: Int32Array; logprobs: Float32Array } {
    const B = this.rowsReady;
    const V = this.model.config.vocabSize;
    if (rngs.length !== B) throw new RangeError(`FastDecoder.sample: ${rngs.length} generators for ${B} rows`);
    const f32 = this.arena.f32; // read in place: nothing is allocated in the arena until the next step
    const z = ptr(this.logits) >>> 2, pr = ptr(this.probs) >>> 2, lse = ptr(this.lse) >>> 2;
    const tokens = new Int32Array(B);
    const logprobs = new Float32Array(B);
    for (let b = 0; b < B; b++) {
      const tok = this.tempReady === 0 ? argmax(f32, z + b * V, V) : sampler.pick(f32, pr + b * V, settings, rngs[b]!, true);
      tokens[b] = tok;
      logprobs[b] = f32[z + b * V + tok]! - f32[lse + b]!;
    }
    return { tokens, logprobs };
  }

  dispose(): void {
    for (const t of this.owned) t.dispose();
  }
}
