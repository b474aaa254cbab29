// The decoder-only transformer of the Llama / Qwen2 / Qwen3 family (HF modeling_llama / modeling_qwen2/3):
// RMSNorm, RoPE, grouped-query attention, SwiGLU MLP, optional q/k/v bias and q/k norm, tied or untied head.
import {
  concat,
  embedding,
  isGradEnabled,
  keep,
  linear,
  linearBf16,
  Bf16Matrix,
  narrow,
  noGrad,
  tidy,
  permute,
  randn,
  rmsNorm,
  rope,
  swiglu,
  causalAttention,
  add,
  assignSlice,
  ones,
  zeros,
  tensor,
  Tensor,
  checkpoint,
  type Backend,
} from '../tensor/index.js';
import { CheckpointError, ConfigError, Rng } from '../util/index.js';
import { countParameters, type ModelConfig } from './config.js';
import type { FusedWeights } from './fused-weights.js';
import type { KVCache } from './kv-cache.js';
import type { LoraAdapters } from './lora.js';
import { applyRotary, type RotaryTables } from './qwen2-vl-rotary.js';
import { expectWeight, rejectUnexpected, type TakeWeight, type WeightMap } from './safetensors.js';

/** One linear projection: HF module path (e.g. `model.layers.0.self_attn.q_proj`), weight (out, in), optional bias. */
export interface Proj {
  name: string;
  /** float32, or bf16 in native memory for a frozen model (`storeFrozenAsBf16`, `fromWeights` with bf16). */
  weight: Tensor | Bf16Matrix;
  bias: Tensor | null;
}

interface Layer {
  inputNorm: Tensor;
  q: Proj;
  k: Proj;
  v: Proj;
  o: Proj;
  qNorm: Tensor | null;
  kNorm: Tensor | null;
  postNorm: Tensor;
  gate: Proj;
  up: Proj;
  down: Proj;
}

/** Options of one forward pass. */
export interface ForwardOptions {
  /** Position of each token: T entries (shared) or B*T (per sequence). @default 0..T-1 */
  positions?: Int32Array;
  /** Append this pass's keys/values to the cache and attend over everything cached so far. */
  cache?: KVCache;
  /** (B, S) 0/1 flags hiding keys (left padding). S is T, or the cache capacity with a cache. */
  keyValid?: Int32Array;
  /** Randomness for LoRA dropout; none = eval mode (no dropout). */
  dropoutRng?: Rng;
  /** Fused inference weights (see fused.ts) to use instead of the per-module projections (no graph). */
  fused?: FusedWeights;
  /** Collect each layer's keys and values (after RoPE), (B, K, T, D), for a later pass to continue from (`past`). */
  kvOut?: LayerKV;
  /**
   * Keys and values of a segment every row continues (batch 1, P positions, from `kvOut`): the tokens take positions
   * P.. and attend over the segment and themselves. Unlike `cache`, differentiable (the shared-prefix forward).
   */
  past?: LayerKV;
  /**
   * Activation checkpointing: keep each layer's input only and recompute the layer in backward (less memory, one more
   * forward). Only where a graph is recorded and without `cache`. Same gradients as without.
   */
  checkpoint?: boolean;
  /** Input embeddings (B*T, C) in place of the ids' embedding rows (a vision-language model's image rows spliced in). */
  inputEmbeds?: Tensor;
  /**
   * Rotary cos / sin tables, (T, D) shared by the batch or (B*T, D), in place of RoPE at `positions` (Qwen2.5-VL's
   * 3-D multimodal positions; see qwen2-vl-rotary.ts).
   */
  rotary?: RotaryTables;
}

/** Rotary tables as tensors that broadcast against (B, n, T, D) for each head count n. */
type RotaryFor = (n: number) => { cos: Tensor; sin: Tensor };

function rotaryTensors(r: RotaryTables, B: number, T: number, D: number, made: Tensor[]): RotaryFor {
  const rows = r.cos.length / D;
  if (rows !== T && rows !== B * T)
    throw new ConfigError(`rotary tables have ${rows} rows of ${D}; expected T = ${T} or B*T = ${B * T}`);
  const byHeads = new Map<number, { cos: Tensor; sin: Tensor }>();
  return (n) => {
    let t = byHeads.get(rows === T ? 0 : n);
    if (t) return t;
    const make = (src: Float32Array): Tensor => {
      if (rows === T) return tensor(src, [T, D]); // broadcasts as a trailing block
      const out = new Float32Array(B * n * T * D);
      for (let b = 0; b < B; b++)
        for (let h = 0; h < n; h++) out.set(src.subarray(b * T * D, (b + 1) * T * D), (b * n + h) * T * D);
      return tensor(out, [B, n, T, D]);
    };
    t = { cos: make(r.cos), sin: make(r.sin) };
    made.push(t.cos, t.sin);
    byHeads.set(rows === T ? 0 : n, t);
    return t;
  };
}

/** What a layer reads besides its input: the forward options, resolved. */
type LayerOptions = Omit<ForwardOptions, 'keyValid'> & {
  keyValid: Int32Array | null;
  local: boolean;
  rotaryFor: RotaryFor | null;
};

/** Per-layer keys and values, (B, K, T, D) each. */
export interface LayerKV {
  keys: Tensor[];
  values: Tensor[];
}

/** The HF weight names of layer i, in the order transformers lists them. */
export function layerWeightNames(c: ModelConfig, i: number): string[] {
  const p = `model.layers.${i}.`;
  const names = [`${p}self_attn.q_proj.weight`];
  if (c.qkvBias) names.push(`${p}self_attn.q_proj.bias`);
  names.push(`${p}self_attn.k_proj.weight`);
  if (c.qkvBias) names.push(`${p}self_attn.k_proj.bias`);
  names.push(`${p}self_attn.v_proj.weight`);
  if (c.qkvBias) names.push(`${p}self_attn.v_proj.bias`);
  names.push(`${p}self_attn.o_proj.weight`);
  if (c.oBias) names.push(`${p}self_attn.o_proj.bias`);
  if (c.qkNorm) names.push(`${p}self_attn.q_norm.weight`, `${p}self_attn.k_norm.weight`);
  names.push(
    `${p}mlp.gate_proj.weight`,
    `${p}mlp.up_proj.weight`,
    `${p}mlp.down_proj.weight`,
    `${p}input_layernorm.weight`,
    `${p}post_attention_layernorm.weight`,
  );
  return names;
}

/** Every weight name and its shape, for a config. */
export function weightShapes(c: ModelConfig): Map<string, number[]> {
  const { hiddenSize: C, headDim: D, numHeads: H, numKvHeads: K, intermediateSize: F, vocabSize: V } = c;
  const shapes = new Map<string, number[]>([['model.embed_tokens.weight', [V, C]]]);
  for (let i = 0; i < c.numLayers; i++) {
    for (const name of layerWeightNames(c, i)) {
      const leaf = name.split('.').slice(-2).join('.');
      const s: Record<string, number[]> = {
        'q_proj.weight': [H * D, C],
        'q_proj.bias': [H * D],
        'k_proj.weight': [K * D, C],
        'k_proj.bias': [K * D],
        'v_proj.weight': [K * D, C],
        'v_proj.bias': [K * D],
        'o_proj.weight': [C, H * D],
        'o_proj.bias': [C],
        'q_norm.weight': [D],
        'k_norm.weight': [D],
        'gate_proj.weight': [F, C],
        'up_proj.weight': [F, C],
        'down_proj.weight': [C, F],
        'input_layernorm.weight': [C],
        'post_attention_layernorm.weight': [C],
      };
      shapes.set(name, s[leaf]!);
    }
  }
  shapes.set('model.norm.weight', [C]);
  if (!c.tieWordEmbeddings) shapes.set('lm_head.weight', [V, C]);
  return shapes;
}

/** A decoder-only transformer holding its weights under Hugging Face's names. */
export class Transformer {
  /** Weights by HF name (the tied LM head has no entry of its own). */
  readonly weights: Map<string, Tensor>;
  /** LoRA adapters, when attached (see lora.ts). */
  lora: LoraAdapters | null = null;
  /**
   * The directory whose weight files hold this model's base exactly as it is in memory (set by `loadModel`; null for a
   * model built in memory). A LoRA checkpoint names it instead of rewriting the frozen base (checkpoint.ts).
   */
  baseDir: string | null = null;
  /**
   * Token ids this model never samples (a vision-language model's vision tokens, set by Qwen25VL): every sampling path
   * and the teacher-forced log-probs and entropy use the distribution renormalized without them (suppress.ts).
   */
  suppressedTokens: Int32Array | null = null;
  private readonly layers: Layer[];

  constructor(
    readonly config: ModelConfig,
    weights: Map<string, Tensor>,
    /** Where the weights came from (a checkpoint directory), for messages. */
    readonly source = '(in memory)',
    /** Projection weights already in bf16 native memory, by weight name (not in `weights`). */
    bf16: ReadonlyMap<string, Bf16Matrix> = new Map(),
  ) {
    this.weights = weights;
    const w = (name: string): Tensor => {
      const t = weights.get(name);
      if (!t) throw new Error(`Transformer: weight ${name} is missing`);
      return t;
    };
    const proj = (name: string, bias: boolean): Proj => ({
      name,
      weight: bf16.get(`${name}.weight`) ?? w(`${name}.weight`),
      bias: bias ? w(`${name}.bias`) : null,
    });
    this.layers = [];
    for (let i = 0; i < config.numLayers; i++) {
      const p = `model.layers.${i}.`;
      this.layers.push({
        inputNorm: w(`${p}input_layernorm.weight`),
        q: proj(`${p}self_attn.q_proj`, config.qkvBias),
        k: proj(`${p}self_attn.k_proj`, config.qkvBias),
        v: proj(`${p}self_attn.v_proj`, config.qkvBias),
        o: proj(`${p}self_attn.o_proj`, config.oBias),
        qNorm: config.qkNorm ? w(`${p}self_attn.q_norm.weight`) : null,
        kNorm: config.qkNorm ? w(`${p}self_attn.k_norm.weight`) : null,
        postNorm: w(`${p}post_attention_layernorm.weight`),
        gate: proj(`${p}mlp.gate_proj`, false),
        up: proj(`${p}mlp.up_proj`, false),
        down: proj(`${p}mlp.down_proj`, false),
      });
    }
  }

  /** A seeded random model, initialised as transformers does (normal(0, 0.02) matrices, zero biases, unit norms). */
  static init(config: ModelConfig, seed = 0, std = 0.02): Transformer {
    const rng = new Rng(seed);
    const weights = new Map<string, Tensor>();
    for (const [name, shape] of weightShapes(config)) {
      const t = name.endsWith('norm.weight')
        ? ones(shape)
        : name.endsWith('.bias')
          ? zeros(shape)
          : randn(shape, rng, std);
      t.requiresGrad = true;
      weights.set(name, keep(t));
    }
    return new Transformer(config, weights, `(random init, seed ${seed})`);
  }

  /** Build from loaded weights; throws CheckpointError naming any missing or mis-shaped tensor. */
  static fromWeights(
    config: ModelConfig,
    loaded: WeightMap,
    source = 'checkpoint',
    /** frozenBf16: projections to bf16 native memory; bf16: projections already there (see `bf16Taker`). */
    opts: { frozenBf16?: boolean; bf16?: ReadonlyMap<string, Bf16Matrix> } = {},
  ): Transformer {
    const weights = new Map<string, Tensor>();
    const bf16 = new Map<string, Bf16Matrix>(opts.bf16 ?? []);
    for (const [name, shape] of weightShapes(config)) {
      const ready = bf16.get(name);
      if (ready) {
        if (ready.rows !== shape[0] || ready.cols !== shape[1])
          throw new CheckpointError(`${source}: tensor \`${name}\` has shape [${ready.shape}], expected [${shape}]`);
        continue;
      }
      const data = expectWeight(loaded, name, shape, source).data;
      // frozen projections go straight to bf16, never through the arena as float32
      if (opts.frozenBf16 && name.endsWith('_proj.weight'))
        bf16.set(name, Bf16Matrix.fromFloat32(data, shape[0]!, shape[1]!));
      else weights.set(name, keep(tensor(data, shape, { requiresGrad: !opts.frozenBf16 })));
    }
    // Harmless extras: rotary inverse frequencies (older Llama exports) and a copy of the tied embedding.
    rejectUnexpected(
      loaded,
      new Set(weights.keys()),
      source,
      (n) => n.endsWith('rotary_emb.inv_freq') || (config.tieWordEmbeddings && n === 'lm_head.weight') || bf16.has(n),
    );
    return new Transformer(config, weights, source, bf16);
  }

  /**
   * A `TakeWeight` for `loadWeights` that moves each projection weight of `config` (right shape) into bf16 native
   * memory as it is read, into `into`; pass `into` to `fromWeights` as `bf16`. The float32 copy of the whole
   * checkpoint then never exists (a 0.5B model: 2 GB less at load).
   */
  static bf16Taker(config: ModelConfig, into: Map<string, Bf16Matrix>): TakeWeight {
    const shapes = weightShapes(config);
    return (name, w) => {
      const shape = shapes.get(name);
      if (!name.endsWith('_proj.weight') || !shape || w.shape.join() !== shape.join()) return false;
      into.set(name, Bf16Matrix.fromFloat32(w.data, shape[0]!, shape[1]!));
      return true;
    };
  }

  /** The LM head matrix (V, C): the embedding when tied. */
  get lmHead(): Tensor {
    return this.weights.get(this.config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight')!;
  }

  /**
   * Move the frozen projection weights (q, k, v, o, gate, up, down of every layer) to bf16 in native memory, beside
   * the tensor arena: half the bytes. Embeddings, the LM head, norms and biases stay
   * float32. The base must be frozen (LoRA attached, or a reference model); it cannot train again afterwards.
   */
  storeFrozenAsBf16(): void {
    const trainable = [...this.weights.values()].some((t) => t.requiresGrad);
    if (trainable)
      throw new ConfigError(
        `${this.source}: bf16 frozen weights need a frozen base (LoRA adapters attached, or a reference model); this model trains its base weights, so keep them float32`,
      );
    for (const p of this.projections()) {
      if (!(p.weight instanceof Tensor)) continue;
      const [rows, cols] = p.weight.shape as [number, number];
      const m = Bf16Matrix.fromFloat32(p.weight.toFloat32Array(), rows, cols, p.weight.backend);
      p.weight.dispose();
      this.weights.delete(`${p.name}.weight`);
      p.weight = m;
    }
  }

  /** The shape of weight `name` (float32 or bf16), or undefined when the model has none of that name. */
  weightShape(name: string): readonly number[] | undefined {
    const t = this.weights.get(name);
    if (t) return t.shape;
    const p = this.projections().find((q) => `${q.name}.weight` === name);
    return p ? p.weight.shape : undefined;
  }

  /** Every projection of every layer. */
  private projections(): Proj[] {
    return this.layers.flatMap((l) => [l.q, l.k, l.v, l.o, l.gate, l.up, l.down]);
  }

  /** Whether the projections are bf16 in native memory (see storeFrozenAsBf16). */
  get hasBf16Weights(): boolean {
    return this.projections().some((p) => p.weight instanceof Bf16Matrix);
  }

  /** Trainable parameters by name: the LoRA adapters when attached (base frozen), else every weight. */
  parameters(): [string, Tensor][] {
    if (this.lora) return this.lora.parameters();
    return [...this.weights].filter(([, t]) => t.requiresGrad);
  }

  /** Freeze (or unfreeze) the base weights. */
  setBaseTrainable(trainable: boolean): void {
    if (trainable && this.hasBf16Weights)
      throw new ConfigError(
        `${this.source}: the base weights are stored as bf16 for a frozen base and cannot train; load the model without bf16 frozen weights to train or merge them`,
      );
    for (const t of this.weights.values()) t.requiresGrad = trainable;
  }

  /** Base weights copied out as float32 arrays (the order transformers writes them; bf16 ones exactly widened). */
  exportWeights(): WeightMap {
    const out: WeightMap = new Map();
    const frozen = new Map(this.projections().map((p) => [`${p.name}.weight`, p.weight]));
    for (const [name, shape] of weightShapes(this.config)) {
      const t = this.weights.get(name) ?? frozen.get(name);
      if (t instanceof Tensor) out.set(name, { shape: [...t.shape], data: t.toFloat32Array() });
      else if (t) out.set(name, { shape, data: t.readRows() });
    }
    return out;
  }

  /** Base parameter count (no adapters, no value head). */
  get numParameters(): number {
    return countParameters(this.config);
  }

  /** The kernel backend holding the weights. */
  get backend(): Backend {
    return this.lmHead.backend;
  }

  /** The projections of each layer (for fused.ts). */
  layerProjections(): { q: Proj; k: Proj; v: Proj; o: Proj; gate: Proj; up: Proj; down: Proj }[] {
    return this.layers.map(({ q, k, v, o, gate, up, down }) => ({ q, k, v, o, gate, up, down }));
  }

  /** x W^T + b, plus the LoRA delta when this projection has an adapter. */
  proj(p: Proj, x: Tensor, rng?: Rng): Tensor {
    const y = p.weight instanceof Tensor ? linear(x, p.weight, p.bias) : linearBf16(x, p.weight, p.bias);
    const delta = this.lora?.delta(p.name, x, rng);
    return delta ? add(y, delta) : y;
  }

  /**
   * Final hidden states (B*T, C), after the last RMSNorm, for token ids (B*T, row-major).
   * With a cache, the tokens continue each cached sequence at index `cache.length`.
   */
  hidden(ids: Int32Array, B: number, T: number, opts: ForwardOptions = {}): Tensor {
    const c = this.config;
    const start = opts.cache?.length ?? opts.past?.keys[0]?.shape[2] ?? 0;
    const positions = opts.positions ?? Int32Array.from({ length: T }, (_, t) => start + t);
    // The first chunk into an empty cache attends over its own keys only (S = T, not the cache capacity).
    const local = opts.cache !== undefined && start === 0 && T > 1;
    let keyValid = opts.keyValid ?? null;
    if (local && keyValid) {
      const S = keyValid.length / B;
      const m = new Int32Array(B * T);
      for (let b = 0; b < B; b++) m.set(keyValid.subarray(b * S, b * S + T), b * T);
      keyValid = m;
    }
    const grad = isGradEnabled();
    const rotaryMade: Tensor[] = [];
    const rotary = opts.rotary ? rotaryTensors(opts.rotary, B, T, c.headDim, rotaryMade) : null;
    // made here, outside the per-layer tidy that would free them after the first layer
    rotary?.(c.numHeads);
    rotary?.(c.numKvHeads);
    const layerOpts = { ...opts, keyValid, local, rotaryFor: rotary };
    if (opts.inputEmbeds && opts.inputEmbeds.shape.join() !== [B * T, c.hiddenSize].join())
      throw new ConfigError(`inputEmbeds has shape [${opts.inputEmbeds.shape}]; expected [${B * T}, ${c.hiddenSize}]`);
    let h = opts.inputEmbeds ?? embedding(this.weights.get('model.embed_tokens.weight')!, ids); // (B*T, C)
    // Without a graph nothing needs the intermediates after the layer: free them per layer (memory ~ one layer).
    const recompute = grad && opts.checkpoint === true && !opts.cache;
    const trainable = recompute ? this.parameters().map(([n, t]) => [n, t] as const) : [];
    this.layers.forEach((l, i) => {
      const prev = h;
      if (recompute) {
        const inner = `layers.${i}.`;
        const params = trainable.filter(([n]) => n.includes(inner)).map(([, t]) => t);
        const out = this.checkpointedLayer(l, i, prev, B, T, positions, start, layerOpts, params);
        h = out.h;
        if (opts.kvOut) {
          opts.kvOut.keys.push(out.k!);
          opts.kvOut.values.push(out.v!);
        }
        return;
      }
      const run = () => this.layer(l, i, prev, B, T, positions, start, layerOpts);
      const out = grad
        ? run()
        : tidy(() => {
            const r = run();
            return opts.kvOut ? [r.h, r.k, r.v] : [r.h];
          });
      h = Array.isArray(out) ? out[0]! : out.h;
      if (opts.kvOut) {
        opts.kvOut.keys.push(Array.isArray(out) ? out[1]! : out.k);
        opts.kvOut.values.push(Array.isArray(out) ? out[2]! : out.v);
      }
      if (!grad && prev !== opts.inputEmbeds) prev.dispose();
    });
    if (!grad) for (const t of rotaryMade) t.dispose();
    if (opts.cache) opts.cache.length = start + T;
    const out = rmsNorm(h, this.weights.get('model.norm.weight')!, c.rmsNormEps);
    if (!grad) h.dispose();
    return out;
  }

  /**
   * `layer` under activation checkpointing: its inputs (h, and the shared prefix's keys and values) are kept, the rest
   * recomputed in backward with the same dropout draws. `params`: the trainable leaves the layer reads.
   */
  private checkpointedLayer(
    l: Layer,
    i: number,
    h: Tensor,
    B: number,
    T: number,
    positions: Int32Array,
    start: number,
    opts: LayerOptions,
    params: readonly Tensor[],
  ): { h: Tensor; k?: Tensor; v?: Tensor } {
    const state = opts.dropoutRng?.getState();
    let rng = opts.dropoutRng;
    const inputs = opts.past ? [h, opts.past.keys[i]!, opts.past.values[i]!] : [h];
    const fn = (x: Tensor, pk?: Tensor, pv?: Tensor): Tensor[] => {
      const past: LayerKV | undefined = pk && pv ? { keys: [], values: [] } : undefined;
      if (past) {
        past.keys[i] = pk!;
        past.values[i] = pv!;
      }
      const r = this.layer(l, i, x, B, T, positions, start, { ...opts, dropoutRng: rng, past });
      return opts.kvOut ? [r.h, r.k, r.v] : [r.h];
    };
    const replay = (): void => {
      if (!state) return;
      rng = new Rng();
      rng.setState(state);
    };
    const [out, k, v] = checkpoint(fn, inputs, params, replay);
    return k && v ? { h: out!, k, v } : { h: out! };
  }

  /** One decoder layer on h (B*T, C): the new hidden states, and this pass's own keys and values (for `kvOut`). */
  private layer(
    l: Layer,
    i: number,
    h: Tensor,
    B: number,
    T: number,
    positions: Int32Array,
    start: number,
    opts: LayerOptions,
  ): { h: Tensor; k: Tensor; v: Tensor } {
    const { numHeads: H, numKvHeads: K, headDim: D, rmsNormEps: eps, ropeTheta } = this.config;
    const rng = opts.dropoutRng;
    // (B, T, n, D) -> (B, n, T, D); with T = 1 both layouts are the same memory, so a reshape does it.
    const heads = (x: Tensor, n: number): Tensor =>
      T === 1 ? x.reshape(B, n, 1, D) : permute(x.reshape(B, T, n, D), [0, 2, 1, 3]);
    const f = opts.fused?.layers[i];
    const x = rmsNorm(h, l.inputNorm, eps);
    let q: Tensor, k: Tensor, vFlat: Tensor;
    if (f) {
      const qkv = linear(x, f.qkv, f.qkvBias); // (N, HD + 2KD)
      q = narrow(qkv, 1, 0, H * D);
      k = narrow(qkv, 1, H * D, K * D);
      vFlat = narrow(qkv, 1, (H + K) * D, K * D);
    } else {
      q = this.proj(l.q, x, rng);
      k = this.proj(l.k, x, rng);
      vFlat = this.proj(l.v, x, rng);
    }
    if (l.qNorm && l.kNorm) {
      q = rmsNorm(q.reshape(B * T * H, D), l.qNorm, eps);
      k = rmsNorm(k.reshape(B * T * K, D), l.kNorm, eps);
    }
    if (opts.rotaryFor) {
      const rq = opts.rotaryFor(H);
      const rk = opts.rotaryFor(K);
      q = applyRotary(heads(q, H), rq.cos, rq.sin); // (B, H, T, D)
      k = applyRotary(heads(k, K), rk.cos, rk.sin); // (B, K, T, D)
    } else {
      q = rope(heads(q, H), positions, ropeTheta); // (B, H, T, D)
      k = rope(heads(k, K), positions, ropeTheta); // (B, K, T, D)
    }
    let v = heads(vFlat, K);
    const own = { k, v };
    let offset = 0;
    if (opts.past) {
      // Every row continues the same segment: its keys and values, repeated over the B rows, then the rows' own.
      const rows = (t: Tensor) => (B === 1 ? t : concat(new Array<Tensor>(B).fill(t), 0));
      k = concat([rows(opts.past.keys[i]!), k], 2);
      v = concat([rows(opts.past.values[i]!), v], 2);
      offset = start;
    }
    if (opts.cache) {
      assignSlice(opts.cache.keys[i]!, k, 2, start);
      assignSlice(opts.cache.values[i]!, v, 2, start);
    }
    if (opts.cache && !opts.local) {
      k = opts.cache.keys[i]!;
      v = opts.cache.values[i]!;
      offset = start;
    }
    const att = causalAttention(q, k, v, { queryOffset: offset, keyValid: opts.keyValid }); // (B, H, T, D)
    const y = T === 1 ? att.reshape(B, H * D) : permute(att, [0, 2, 1, 3]).reshape(B * T, H * D);
    const h1 = add(h, f ? linear(y, f.o, f.oBias) : this.proj(l.o, y, rng));
    const x2 = rmsNorm(h1, l.postNorm, eps);
    if (f) {
      const F = this.config.intermediateSize;
      const gu = linear(x2, f.gateUp); // (N, 2F)
      return { h: add(h1, linear(swiglu(narrow(gu, 1, 0, F), narrow(gu, 1, F, F)), f.down)), ...own };
    }
    const g = this.proj(l.gate, x2, rng);
    const u = this.proj(l.up, x2, rng);
    return { h: add(h1, this.proj(l.down, swiglu(g, u), rng)), ...own };
  }

  /** Logits (N, V) of final hidden states (N, C). */
  logits(hidden: Tensor): Tensor {
    return linear(hidden, this.lmHead);
  }

  /** Free every weight (and adapter). */
  dispose(): void {
    noGrad(() => {
      for (const t of this.weights.values()) t.dispose();
      for (const p of this.projections()) if (!(p.weight instanceof Tensor)) p.weight.dispose();
      this.lora?.dispose();
    });
  }
}
