// Teacher-forced forward over sequences that share a prefix (the system prompt of every training sequence):
// the prefix runs once with batch 1, each suffix attends over the prefix's keys and its own. Differentiable: the
// prefix's gradient is the sum over the sequences, so outputs and gradients equal the padded batch's.
import { causalAttention, concat, entropy as entropyOp, isGradEnabled, logprobOfTarget, permute, rmsNorm, rope, swiglu, add, embedding, tidy, type Tensor } from '../tensor/index.js';
import type { Rng } from '../util/index.js';
import type { PackedBatch, TokenOutputs, ValueHead } from './forward.js';
import type { Transformer } from './transformer.js';

/** A packed batch whose rows share their first `prefix.ids.length` input tokens; ids/targets/T are the suffix rows. */
export interface PrefixPackedBatch extends PackedBatch {
  /** The shared inputs (positions 0..P-1) and their targets (tokens 1..P, shared too). */
  prefix: { ids: Int32Array; targets: Int32Array };
}

/** Length of the longest prefix all sequences share. */
export function commonPrefixLength(sequences: readonly (readonly number[])[]): number {
  const first = sequences[0]!;
  let n = Math.min(...sequences.map((s) => s.length));
  for (const s of sequences) {
    let i = 0;
    while (i < n && s[i] === first[i]) i++;
    n = i;
  }
  return n;
}

/**
 * Pack with the shared prefix split off, or null when the sequences share fewer than `minPrefix` tokens (or
 * there is one sequence): then the plain right-padded batch is as cheap. The prefix holds P = common - 1 inputs
 * (so its targets are shared too); suffix row b holds inputs P..L_b-2, T = the longest (at least 1).
 */
export function packSharedPrefix(sequences: readonly (readonly number[])[], minPrefix = 16): PrefixPackedBatch | null {
  if (sequences.length < 2 || sequences.some((s) => s.length === 0)) return null;
  const P = commonPrefixLength(sequences) - 1;
  if (P < minPrefix) return null;
  const first = sequences[0]!;
  const B = sequences.length;
  const T = Math.max(1, ...sequences.map((s) => s.length - 1 - P));
  const ids = new Int32Array(B * T);
  const targets = new Int32Array(B * T);
  sequences.forEach((s, b) => {
    for (let t = P; t < s.length - 1; t++) {
      ids[b * T + t - P] = s[t]!;
      targets[b * T + t - P] = s[t + 1]!;
    }
  });
  return { B, T, ids, targets, lengths: sequences.map((s) => s.length), prefix: { ids: Int32Array.from(first.slice(0, P)), targets: Int32Array.from(first.slice(1, P + 1)) } };
}

/** Per-token outputs of the prefix (P entries each) and of the suffix rows (B*T each). */
export interface PrefixTokenOutputs extends TokenOutputs {
  prefix: TokenOutputs;
}

/** `tokenForward` for a PrefixPackedBatch: the same outputs as the padded batch, the prefix computed once. */
export function prefixTokenForward(model: Transformer, batch: PrefixPackedBatch, opts: { logprobs?: boolean; entropy?: boolean; valueHead?: ValueHead; dropoutRng?: Rng } = {}): PrefixTokenOutputs {
  const [ph, sh] = prefixHidden(model, batch, opts.dropoutRng);
  const heads = (hidden: Tensor, targets: Int32Array): TokenOutputs => {
    const out: TokenOutputs = { hidden };
    if (opts.logprobs !== false || opts.entropy) {
      const logits = model.logits(hidden);
      if (opts.logprobs !== false) out.logprobs = logprobOfTarget(logits, targets);
      if (opts.entropy) out.entropy = entropyOp(logits);
    }
    if (opts.valueHead) out.values = opts.valueHead.forward(hidden);
    return out;
  };
  return { ...heads(sh, batch.targets), prefix: heads(ph, batch.prefix.targets) };
}

/** Final hidden states of the prefix (P, C) and of the suffix rows (B*T, C). */
function prefixHidden(model: Transformer, batch: PrefixPackedBatch, rng?: Rng): [Tensor, Tensor] {
  const c = model.config;
  const P = batch.prefix.ids.length;
  const { B, T } = batch;
  const embed = model.weights.get('model.embed_tokens.weight')!;
  let hp = embedding(embed, batch.prefix.ids);
  let hs = embedding(embed, batch.ids);
  const posP = Int32Array.from({ length: P }, (_, t) => t);
  const posS = Int32Array.from({ length: T }, (_, t) => P + t);
  const grad = isGradEnabled();
  const projs = model.layerProjections();
  for (let i = 0; i < c.numLayers; i++) {
    const [a, b] = [hp, hs];
    const step = () => prefixLayer(model, i, projs[i]!, a, b, B, T, P, posP, posS, rng);
    [hp, hs] = grad ? step() : tidy(step);
    if (!grad) (a.dispose(), b.dispose());
  }
  const norm = model.weights.get('model.norm.weight')!;
  const out: [Tensor, Tensor] = [rmsNorm(hp, norm, c.rmsNormEps), rmsNorm(hs, norm, c.rmsNormEps)];
  if (!grad) (hp.dispose(), hs.dispose());
  return out;
}

type Projs = ReturnType<Transformer['layerProjections']>[number];

/** One decoder layer (as Transformer's) on the prefix (1, P) and the suffix rows (B, T) together. */
function prefixLayer(model: Transformer, i: number, l: Projs, hp: Tensor, hs: Tensor, B: number, T: number, P: number, posP: Int32Array, posS: Int32Array, rng?: Rng): [Tensor, Tensor] {
  const { numHeads: H, numKvHeads: K, headDim: D, rmsNormEps: eps, ropeTheta } = model.config;
  const w = (name: string) => model.weights.get(`model.layers.${i}.${name}`) ?? null;
  const qNorm = w('self_attn.q_norm.weight');
  const kNorm = w('self_attn.k_norm.weight');
  const qkv = (h: Tensor, rows: number, len: number, pos: Int32Array): [Tensor, Tensor, Tensor] => {
    const x = rmsNorm(h, w('input_layernorm.weight')!, eps);
    let q = model.proj(l.q, x, rng);
    let k = model.proj(l.k, x, rng);
    if (qNorm && kNorm) {
      q = rmsNorm(q.reshape(rows * len * H, D), qNorm, eps);
      k = rmsNorm(k.reshape(rows * len * K, D), kNorm, eps);
    }
    const heads = (t: Tensor, n: number) => (len === 1 ? t.reshape(rows, n, 1, D) : permute(t.reshape(rows, len, n, D), [0, 2, 1, 3]));
    return [rope(heads(q, H), pos, ropeTheta), rope(heads(k, K), pos, ropeTheta), heads(model.proj(l.v, x, rng), K)];
  };
  const [qp, kp, vp] = qkv(hp, 1, P, posP);
  const [qs, ks, vs] = qkv(hs, B, T, posS);
  const rows = (t: Tensor) => (B === 1 ? t : concat(new Array<Tensor>(B).fill(t), 0));
  const attP = causalAttention(qp, kp, vp);
  const attS = causalAttention(qs, concat([rows(kp), ks], 2), concat([rows(vp), vs], 2), { queryOffset: P });
  const rest = (h: Tensor, att: Tensor, n: number, len: number): Tensor => {
    const y = len === 1 ? att.reshape(n, H * D) : permute(att, [0, 2, 1, 3]).reshape(n * len, H * D);
    const h1 = add(h, model.proj(l.o, y, rng));
    const x2 = rmsNorm(h1, w('post_attention_layernorm.weight')!, eps);
    return add(h1, model.proj(l.down, swiglu(model.proj(l.gate, x2, rng), model.proj(l.up, x2, rng)), rng));
  };
  return [rest(hp, attP, 1, P), rest(hs, attS, B, T)];
}

/** `unpack` for a PrefixPackedBatch: each sequence's P prefix entries, then its L - 1 - P suffix entries. */
export function unpackPrefix(prefixFlat: Float32Array, flat: Float32Array, batch: PrefixPackedBatch): Float32Array[] {
  const P = batch.prefix.ids.length;
  return batch.lengths.map((L, b) => {
    const out = new Float32Array(L - 1);
    out.set(prefixFlat);
    out.set(flat.subarray(b * batch.T, b * batch.T + L - 1 - P), P);
    return out;
  });
}

/** The inverse of `unpackPrefix` for gradients: the prefix part summed over the sequences, the suffix rows padded with 0. */
export function packPrefixPerToken(perSeq: readonly ArrayLike<number>[], batch: PrefixPackedBatch, what = 'gradient'): { prefix: Float32Array; rows: Float32Array } {
  if (perSeq.length !== batch.B) throw new RangeError(`${what}: ${perSeq.length} sequences for a batch of ${batch.B}`);
  const P = batch.prefix.ids.length;
  const prefix = new Float32Array(P);
  const rows = new Float32Array(batch.B * batch.T);
  perSeq.forEach((a, b) => {
    const want = batch.lengths[b]! - 1;
    if (a.length !== want) throw new RangeError(`${what}: sequence ${b} has ${a.length} entries; expected ${want} (one per predicted token)`);
    for (let t = 0; t < P; t++) prefix[t] += a[t]!;
    for (let t = P; t < want; t++) rows[b * batch.T + t - P] = a[t]!;
  });
  return { prefix, rows };
}
