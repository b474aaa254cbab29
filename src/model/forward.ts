// Teacher-forced forward for training: per-token log-probs of the next token, entropy, and critic values on a
// padded token batch (a prefix shared by every row computed once), the token-aligned layout the engine seam
// speaks, and the value head (a Linear(hidden, 1) on the final hidden state, as TRL's).
import { keep, linear, randn, tensor, zeros, type Tensor } from '../tensor/index.js';
import { Rng } from '../util/index.js';
import { expectWeight, rejectUnexpected, type WeightMap } from './safetensors.js';
import { tokenStats } from './token-stats.js';
import type { LayerKV, Transformer } from './transformer.js';

/** The critic's head: value = w . h + b on each final hidden state h. */
export class ValueHead {
  constructor(
    readonly weight: Tensor,
    readonly bias: Tensor,
  ) {}

  /** Seeded init: small normal weights, zero bias. */
  static init(hiddenSize: number, seed = 0, std = 0.02): ValueHead {
    const rng = new Rng(seed);
    return new ValueHead(
      keep(randn([1, hiddenSize], rng, std, { requiresGrad: true })),
      keep(zeros([1], { requiresGrad: true })),
    );
  }

  /** From `value_head.weight` (1, C) and `value_head.bias` (1). */
  static fromWeights(loaded: WeightMap, hiddenSize: number, source = 'value_head.safetensors'): ValueHead {
    const w = expectWeight(loaded, 'value_head.weight', [1, hiddenSize], source);
    const b = expectWeight(loaded, 'value_head.bias', [1], source);
    rejectUnexpected(loaded, new Set(['value_head.weight', 'value_head.bias']), source);
    return new ValueHead(
      keep(tensor(w.data, w.shape, { requiresGrad: true })),
      keep(tensor(b.data, b.shape, { requiresGrad: true })),
    );
  }

  /** (N, C) -> (N). */
  forward(hidden: Tensor): Tensor {
    return linear(hidden, this.weight, this.bias).reshape(hidden.shape[0]!);
  }

  parameters(): [string, Tensor][] {
    return [
      ['value_head.weight', this.weight],
      ['value_head.bias', this.bias],
    ];
  }

  exportWeights(): WeightMap {
    return new Map(this.parameters().map(([n, t]) => [n, { shape: [...t.shape], data: t.toFloat32Array() }]));
  }

  dispose(): void {
    this.weight.dispose();
    this.bias.dispose();
  }
}

/** Right-padded token rows, as the engine seam's `SequenceBatch`: (B, T) ids row-major and each row's length. */
export interface PaddedTokens {
  B: number;
  T: number;
  ids: Int32Array;
  lengths: ArrayLike<number>;
}

/**
 * A token batch laid out for the model: row b's inputs are its tokens 0..L_b−2, its targets tokens 1..L_b−1. A
 * prefix every row shares (`prefix`, P inputs and their P targets; P = 0: none) runs once with batch 1 and the
 * rows hold the inputs from P on, so T is the longest row's inputs after the prefix (at least 1).
 */
export interface PackedBatch {
  B: number;
  T: number;
  ids: Int32Array;
  targets: Int32Array;
  /** Tokens per row (inputs + 1). */
  lengths: Int32Array;
  prefix: { ids: Int32Array; targets: Int32Array };
}

/** Length of the longest prefix the first `B` rows share (up to the shortest row). */
export function commonPrefixLength(rows: PaddedTokens): number {
  const { B, T, ids, lengths } = rows;
  let n = T;
  for (let b = 0; b < B; b++) n = Math.min(n, lengths[b]!);
  for (let b = 1; b < B; b++) {
    let i = 0;
    while (i < n && ids[b * T + i] === ids[i]) i++;
    n = i;
  }
  return n;
}

/**
 * Lay out `rows` for `tokenForward`. With `minPrefix` > 0 and two or more rows sharing at least `minPrefix` + 1
 * tokens, the shared inputs go into `prefix` (P = shared − 1 so that their targets are shared too).
 */
export function packTokens(rows: PaddedTokens, minPrefix = 0): PackedBatch {
  const { B, ids: src, lengths } = rows;
  for (let b = 0; b < B; b++)
    if (!(lengths[b]! >= 1 && lengths[b]! <= rows.T))
      throw new RangeError(`packTokens: row ${b} has length ${lengths[b]}; each row needs 1..T = ${rows.T} tokens`);
  if (B === 0) throw new RangeError('packTokens: the batch has no rows');
  const shared = minPrefix > 0 && B > 1 ? commonPrefixLength(rows) - 1 : 0;
  const P = shared >= minPrefix ? shared : 0;
  let longest = 0;
  for (let b = 0; b < B; b++) longest = Math.max(longest, lengths[b]! - 1 - P);
  const T = Math.max(1, longest);
  const ids = new Int32Array(B * T);
  const targets = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const o = b * rows.T;
    for (let t = P; t < lengths[b]! - 1; t++) {
      ids[b * T + t - P] = src[o + t]!;
      targets[b * T + t - P] = src[o + t + 1]!;
    }
  }
  return {
    B,
    T,
    ids,
    targets,
    lengths: Int32Array.from(lengths),
    prefix: { ids: src.slice(0, P), targets: src.slice(1, P + 1) },
  };
}

/** Right-pad plain id lists (each >= 1 token) and lay them out without a prefix (tests, tools). */
export function packSequences(sequences: readonly (readonly number[])[]): PackedBatch {
  if (sequences.length === 0 || sequences.some((s) => s.length === 0))
    throw new RangeError(
      `packSequences: need one or more non-empty sequences, got lengths [${sequences.map((s) => s.length)}]`,
    );
  const T = Math.max(...sequences.map((s) => s.length));
  const ids = new Int32Array(sequences.length * T);
  sequences.forEach((s, b) => ids.set(s, b * T));
  return packTokens({ B: sequences.length, T, ids, lengths: sequences.map((s) => s.length) });
}

/** Per-token outputs, row-major over the packed rows (B*T) and, with a prefix, over the prefix (P). */
export interface TokenOutputs {
  hidden: Tensor;
  logprobs?: Tensor;
  entropy?: Tensor;
  values?: Tensor;
  prefix?: { hidden: Tensor; logprobs?: Tensor; entropy?: Tensor; values?: Tensor };
}

/** What `tokenForward` computes and how. */
export interface TokenForwardOptions {
  /** Log p(target) of each token. @default true */
  logprobs?: boolean;
  /** Entropy of each next-token distribution. @default false */
  entropy?: boolean;
  /** Critic values from this head on the same trunk. */
  valueHead?: ValueHead;
  /** LoRA dropout draws (training); none = eval mode. */
  dropoutRng?: Rng;
  /** Recompute each layer in backward instead of keeping its activations (ForwardOptions.checkpoint). @default false */
  checkpoint?: boolean;
  /** Scratch bytes of one chunk of logits (token-stats.ts). @default 256 MiB */
  logitsChunkBytes?: number;
}

/**
 * Teacher-forced outputs over a packed batch: log p(target) (temperature 1), entropy of the next-token
 * distribution, and values from `valueHead` on the same trunk. A shared prefix runs first (batch 1) and the rows
 * continue it through `ForwardOptions.past`, so outputs and gradients equal the plain padded batch's. Log-probs and
 * entropy come a chunk of rows at a time (token-stats.ts), without the model's suppressed tokens when it has them
 * (a VLM's vision tokens). Differentiable.
 */
export function tokenForward(model: Transformer, batch: PackedBatch, opts: TokenForwardOptions = {}): TokenOutputs {
  const rng = {
    ...(opts.dropoutRng ? { dropoutRng: opts.dropoutRng } : {}),
    ...(opts.checkpoint ? { checkpoint: true } : {}),
  };
  const heads = (hidden: Tensor, targets: Int32Array) => {
    const want = { logprobs: opts.logprobs !== false, entropy: opts.entropy === true };
    const out: { hidden: Tensor; logprobs?: Tensor; entropy?: Tensor; values?: Tensor } = {
      hidden,
      ...tokenStats(hidden, model.lmHead, targets, want, opts.logitsChunkBytes, model.suppressedTokens),
    };
    if (opts.valueHead) out.values = opts.valueHead.forward(hidden);
    return out;
  };
  const P = batch.prefix.ids.length;
  if (P === 0) return heads(model.hidden(batch.ids, batch.B, batch.T, rng), batch.targets);
  const past: LayerKV = { keys: [], values: [] };
  const prefix = heads(model.hidden(batch.prefix.ids, 1, P, { ...rng, kvOut: past }), batch.prefix.targets);
  return { ...heads(model.hidden(batch.ids, batch.B, batch.T, { ...rng, past }), batch.targets), prefix };
}

/**
 * Outputs of `tokenForward` (one kind: `rows` over the packed rows, `prefix` over the prefix) into the token-aligned
 * layout of a (B, T) token batch: entry (b, t) scores token t, i.e. comes from input position t − 1. Row i of the
 * packed batch goes to row `at[i]` of `out` (default: i); entries at t = 0 and at padding stay 0.
 */
export function tokenAligned(
  packed: PackedBatch,
  rows: Float32Array,
  prefix: Float32Array | null,
  out: Float32Array,
  T: number,
  at?: readonly number[],
): Float32Array {
  const P = packed.prefix.ids.length;
  for (let i = 0; i < packed.B; i++) {
    const o = (at ? at[i]! : i) * T;
    const L = packed.lengths[i]!;
    for (let t = 1; t <= Math.min(P, L - 1); t++) out[o + t] = prefix![t - 1]!;
    for (let t = P + 1; t < L; t++) out[o + t] = rows[i * packed.T + t - 1 - P]!;
  }
  return out;
}

/**
 * The inverse of `tokenAligned` for gradients: (B, T) token-aligned d loss / d output -> the packed rows, and the
 * prefix summed over the rows.
 */
export function packedGradient(
  packed: PackedBatch,
  grad: ArrayLike<number>,
  T: number,
  what = 'gradient',
): { rows: Float32Array; prefix: Float32Array } {
  if (grad.length !== packed.B * T)
    throw new RangeError(
      `${what}: ${grad.length} entries for a (B, T) = (${packed.B}, ${T}) batch; expected ${packed.B * T}`,
    );
  const P = packed.prefix.ids.length;
  const rows = new Float32Array(packed.B * packed.T);
  const prefix = new Float32Array(P);
  for (let b = 0; b < packed.B; b++) {
    const L = packed.lengths[b]!;
    for (let t = 1; t <= Math.min(P, L - 1); t++) prefix[t - 1]! += grad[b * T + t]!;
    for (let t = P + 1; t < L; t++) rows[b * packed.T + t - 1 - P] = grad[b * T + t]!;
  }
  return { rows, prefix };
}

/** Per-row copies (L − 1 entries each) of a prefix-free packed output: tests and tools that compare sequences. */
export function unpack(flat: Float32Array, batch: PackedBatch): Float32Array[] {
  if (batch.prefix.ids.length > 0) throw new RangeError('unpack: the batch has a shared prefix; use tokenAligned');
  return Array.from(batch.lengths, (L, b) => flat.slice(b * batch.T, b * batch.T + L - 1));
}
