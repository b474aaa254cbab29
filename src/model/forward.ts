// Teacher-forced forward for training: per-token log-probs of the next token, entropy, and critic values,
// on right-padded batches; and the value head (a Linear(hidden, 1) on the final hidden state, as TRL's).
import { entropy as entropyOp, keep, linear, logprobOfTarget, randn, tensor, zeros, type Tensor } from '../tensor/index.js';
import { Rng } from '../util/index.js';
import { expectWeight, type WeightMap } from './safetensors.js';
import type { Transformer } from './transformer.js';

/** The critic's head: value = w . h + b on each final hidden state h. */
export class ValueHead {
  constructor(readonly weight: Tensor, readonly bias: Tensor) {}

  /** Seeded init: small normal weights, zero bias. */
  static init(hiddenSize: number, seed = 0, std = 0.02): ValueHead {
    const rng = new Rng(seed);
    return new ValueHead(keep(randn([1, hiddenSize], rng, std, { requiresGrad: true })), keep(zeros([1], { requiresGrad: true })));
  }

  /** From `value_head.weight` (1, C) and `value_head.bias` (1). */
  static fromWeights(loaded: WeightMap, hiddenSize: number, source = 'value_head.safetensors'): ValueHead {
    const w = expectWeight(loaded, 'value_head.weight', [1, hiddenSize], source);
    const b = expectWeight(loaded, 'value_head.bias', [1], source);
    return new ValueHead(keep(tensor(w.data, w.shape, { requiresGrad: true })), keep(tensor(b.data, b.shape, { requiresGrad: true })));
  }

  /** (N, C) -> (N). */
  forward(hidden: Tensor): Tensor {
    return linear(hidden, this.weight, this.bias).reshape(hidden.shape[0]!);
  }

  parameters(): [string, Tensor][] {
    return [['value_head.weight', this.weight], ['value_head.bias', this.bias]];
  }

  exportWeights(): WeightMap {
    return new Map(this.parameters().map(([n, t]) => [n, { shape: [...t.shape], data: t.toFloat32Array() }]));
  }

  dispose(): void {
    this.weight.dispose();
    this.bias.dispose();
  }
}

/** Sequences packed into one right-padded (B, T) batch; targets are the next tokens. */
export interface PackedBatch {
  B: number;
  T: number;
  ids: Int32Array;
  targets: Int32Array;
  /** Length of each sequence (its outputs are the first length - 1 positions). */
  lengths: number[];
}

/** Right-pad `sequences` (each >= 1 token; a 1-token sequence predicts nothing) to the longest; pad id and pad targets are 0. */
export function packSequences(sequences: readonly (readonly number[])[]): PackedBatch {
  const B = sequences.length;
  if (B === 0 || sequences.some((s) => s.length === 0)) throw new RangeError(`packSequences: need one or more non-empty sequences, got lengths [${sequences.map((s) => s.length)}]`);
  const T = Math.max(1, ...sequences.map((s) => s.length - 1));
  const ids = new Int32Array(B * T);
  const targets = new Int32Array(B * T);
  sequences.forEach((s, b) => {
    for (let t = 0; t < s.length - 1; t++) {
      ids[b * T + t] = s[t]!;
      targets[b * T + t] = s[t + 1]!;
    }
  });
  return { B, T, ids, targets, lengths: sequences.map((s) => s.length) };
}

/** Per-token outputs (each (B*T), row-major over the packed batch). */
export interface TokenOutputs {
  hidden: Tensor;
  logprobs?: Tensor;
  entropy?: Tensor;
  values?: Tensor;
}

/**
 * Teacher-forced outputs over a packed batch: log p(target) (temperature 1), entropy of the next-token
 * distribution, and values from `valueHead` on the same trunk. Differentiable.
 */
export function tokenForward(model: Transformer, batch: PackedBatch, opts: { logprobs?: boolean; entropy?: boolean; valueHead?: ValueHead; dropoutRng?: Rng } = {}): TokenOutputs {
  const hidden = model.hidden(batch.ids, batch.B, batch.T, opts.dropoutRng ? { dropoutRng: opts.dropoutRng } : {});
  const out: TokenOutputs = { hidden };
  if (opts.logprobs !== false || opts.entropy) {
    const logits = model.logits(hidden); // (B*T, V)
    if (opts.logprobs !== false) out.logprobs = logprobOfTarget(logits, batch.targets);
    if (opts.entropy) out.entropy = entropyOp(logits);
  }
  if (opts.valueHead) out.values = opts.valueHead.forward(hidden);
  return out;
}

/** Cut a (B*T) per-token array into one array per sequence (length - 1 entries each). */
export function unpack(flat: Float32Array, batch: PackedBatch): Float32Array[] {
  return batch.lengths.map((L, b) => flat.slice(b * batch.T, b * batch.T + L - 1));
}

/** The inverse of `unpack`: per-sequence arrays into a (B*T) array, zero at padding. */
export function packPerToken(perSeq: readonly ArrayLike<number>[], batch: PackedBatch, what = 'gradient'): Float32Array {
  if (perSeq.length !== batch.B) throw new RangeError(`${what}: ${perSeq.length} sequences for a batch of ${batch.B}`);
  const flat = new Float32Array(batch.B * batch.T);
  perSeq.forEach((a, b) => {
    const want = batch.lengths[b]! - 1;
    if (a.length !== want) throw new RangeError(`${what}: sequence ${b} has ${a.length} entries; expected ${want} (one per predicted token)`);
    flat.set(a, b * batch.T);
  });
  return flat;
}
