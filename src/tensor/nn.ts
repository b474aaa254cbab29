// Fused neural-net ops with explicit backward kernels: embedding, RMSNorm, RoPE, SwiGLU, GELU, softmax,
// log-prob of target, cross-entropy, entropy, causal attention with grouped KV heads, dropout.

import { ShapeError } from '../util/index.js';
import type { Rng } from '../util/index.js';
import type { AttentionDims } from './backend.js';
import { tensor } from './creation.js';
import { backendOf, mul, scale, sum } from './ops.js';
import { Tensor, attach } from './tensor.js';

function checkIds(ids: Int32Array, V: number, what: string): void {
  for (let i = 0; i < ids.length; i++)
    if (!(ids[i]! >= 0 && ids[i]! < V))
      throw new ShapeError(`${what}: id ${ids[i]} at position ${i} is outside [0, ${V})`);
}

/** Rows of weight (V, C) picked by ids -> (N, C). */
export function embedding(weight: Tensor, ids: Int32Array): Tensor {
  if (weight.ndim !== 2) throw new ShapeError(`embedding: weight must be (V, C), got [${weight.shape}]`);
  const [V, C] = weight.shape as [number, number];
  checkIds(ids, V, 'embedding');
  const be = weight.backend;
  const out = Tensor.empty([ids.length, C], be);
  be.embedding(weight.buf, ids, out.buf, C);
  const idsCopy = ids.slice();
  return attach(out, 'embedding', [weight], (g) => {
    const gw = Tensor.empty(weight.shape, be);
    be.fill(gw.buf, 0);
    be.embeddingBackward(g.buf, idsCopy, gw.buf, C);
    return [gw];
  });
}

/** x / sqrt(mean(x^2) + eps) * weight over the last dim. */
export function rmsNorm(x: Tensor, weight: Tensor, eps = 1e-6): Tensor {
  const C = x.shape[x.ndim - 1]!;
  if (weight.size !== C)
    throw new ShapeError(`rmsNorm: weight [${weight.shape}] does not match the last dim of x [${x.shape}]`);
  const rows = x.size / C;
  const be = backendOf(x, weight);
  const out = Tensor.empty(x.shape, be);
  const rstd = Tensor.empty([rows], be);
  be.rmsNorm(x.buf, weight.buf, out.buf, rstd.buf, rows, C, eps);
  return attach(
    out,
    'rmsNorm',
    [x, weight],
    (g) => {
      const gx = Tensor.empty(x.shape, be);
      const gw = Tensor.empty(weight.shape, be);
      be.fill(gw.buf, 0);
      be.rmsNormBackward(g.buf, x.buf, weight.buf, rstd.buf, gx.buf, gw.buf, rows, C);
      return [gx, weight.requiresGrad ? gw : (gw.dispose(), null)];
    },
    [rstd],
  );
}

/**
 * Rotary position embedding on x (B, H, T, D), HF's rotate_half convention (Llama, Qwen).
 * positions: T entries (shared by the batch) or B*T (per sequence, e.g. with a KV cache or left padding).
 */
export function rope(x: Tensor, positions: Int32Array, theta = 10000): Tensor {
  if (x.ndim !== 4 || x.shape[3]! % 2 !== 0)
    throw new ShapeError(`rope: x must be (B, H, T, D) with even D, got [${x.shape}]`);
  const [B, H, T, D] = x.shape as [number, number, number, number];
  if (positions.length !== T && positions.length !== B * T)
    throw new ShapeError(`rope: positions has ${positions.length} entries; expected T=${T} or B*T=${B * T}`);
  const be = x.backend;
  const pos = positions.slice();
  const out = Tensor.empty(x.shape, be);
  be.rope(x.buf, out.buf, B, H, T, D, pos, theta, false);
  return attach(out, 'rope', [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.rope(g.buf, gx.buf, B, H, T, D, pos, theta, true);
    return [gx];
  });
}

/** silu(gate) * up, fused. */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  if (gate.size !== up.size) throw new ShapeError(`swiglu: gate [${gate.shape}] and up [${up.shape}] differ`);
  const be = backendOf(gate, up);
  const out = Tensor.empty(gate.shape, be);
  be.swiglu(gate.buf, up.buf, out.buf, gate.size);
  return attach(out, 'swiglu', [gate, up], (g) => {
    const dg = Tensor.empty(gate.shape, be),
      du = Tensor.empty(up.shape, be);
    be.swigluBackward(g.buf, gate.buf, up.buf, dg.buf, du.buf, gate.size);
    return [dg, du];
  });
}

function lastAxisOnly(x: Tensor, axis: number, what: string): number {
  if (axis !== -1 && axis !== x.ndim - 1)
    throw new ShapeError(`${what}: only the last axis is supported, got axis ${axis} of [${x.shape}]; transpose first`);
  return x.shape[x.ndim - 1]!;
}

function softmaxImpl(x: Tensor, axis: number, log: boolean): Tensor {
  const C = lastAxisOnly(x, axis, log ? 'logSoftmax' : 'softmax');
  const rows = x.size / C;
  const be = x.backend;
  const out = Tensor.empty(x.shape, be);
  be.softmax(x.buf, out.buf, rows, C, log);
  return attach(out, log ? 'logSoftmax' : 'softmax', [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.softmaxBackward(out.buf, g.buf, gx.buf, rows, C, log);
    return [gx];
  });
}

/** Softmax over the last axis. */
export const softmax = (x: Tensor, axis = -1): Tensor => softmaxImpl(x, axis, false);
/** Log-softmax over the last axis. */
export const logSoftmax = (x: Tensor, axis = -1): Tensor => softmaxImpl(x, axis, true);

function checkLogits(logits: Tensor, what: string): [number, number] {
  if (logits.ndim !== 2) throw new ShapeError(`${what}: logits must be (N, V), got [${logits.shape}]`);
  return logits.shape as [number, number];
}

/** log softmax(logits)[n, targets[n]] -> (N), fused (no (N, V) log-prob tensor is made). */
export function logprobOfTarget(logits: Tensor, targets: Int32Array): Tensor {
  const [N, V] = checkLogits(logits, 'logprobOfTarget');
  if (targets.length !== N) throw new ShapeError(`logprobOfTarget: ${targets.length} targets for ${N} rows of logits`);
  checkIds(targets, V, 'logprobOfTarget');
  const be = logits.backend;
  const tg = targets.slice();
  const out = Tensor.empty([N], be);
  const lse = Tensor.empty([N], be);
  be.logprobTarget(logits.buf, tg, out.buf, lse.buf, N, V);
  return attach(
    out,
    'logprobOfTarget',
    [logits],
    (g) => {
      const gx = Tensor.empty(logits.shape, be);
      be.logprobTargetBackward(g.buf, logits.buf, tg, lse.buf, gx.buf, N, V);
      return [gx];
    },
    [lse],
  );
}

/** Mean cross-entropy over rows (weighted by mask when given: sum(mask * nll) / sum(mask)). A scalar. */
export function crossEntropy(logits: Tensor, targets: Int32Array, mask?: Float32Array | readonly number[]): Tensor {
  const lp = logprobOfTarget(logits, targets);
  const N = lp.size;
  let loss: Tensor;
  if (!mask) {
    const s = sum(lp);
    loss = scale(s, -1 / N);
  } else {
    if (mask.length !== N) throw new ShapeError(`crossEntropy: mask has ${mask.length} entries for ${N} rows`);
    let total = 0;
    for (let i = 0; i < N; i++) total += mask[i]!;
    const w = tensor(
      Array.from(mask, (m) => (total > 0 ? -m / total : 0)),
      [N],
    );
    const prod = mul(lp, w);
    loss = sum(prod);
  }
  return loss;
}

/** Entropy of softmax(logits) per row -> (N), differentiable. */
export function entropy(logits: Tensor): Tensor {
  const [N, V] = checkLogits(logits, 'entropy');
  const be = logits.backend;
  const out = Tensor.empty([N], be);
  const lse = Tensor.empty([N], be);
  be.entropy(logits.buf, out.buf, lse.buf, N, V);
  return attach(
    out,
    'entropy',
    [logits],
    (g) => {
      const gx = Tensor.empty(logits.shape, be);
      be.entropyBackward(g.buf, logits.buf, lse.buf, out.buf, gx.buf, N, V);
      return [gx];
    },
    [lse],
  );
}

export interface AttentionOptions {
  /** Position of query 0 among the keys: query t sees keys <= queryOffset + t. @default S - T */
  queryOffset?: number;
  /** (B, S) flags; 0 hides that key from every query of its sequence (padding). */
  keyValid?: Int32Array | Uint8Array | null;
  /** Score scale. @default 1 / sqrt(D) */
  scale?: number;
}

/**
 * Causal scaled dot-product attention with grouped KV heads: q (B, Hq, T, D), k and v (B, Hkv, S, D),
 * Hq a multiple of Hkv (query head h reads KV head floor(h / (Hq / Hkv))). Returns (B, Hq, T, D).
 */
export function causalAttention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
  if (q.ndim !== 4 || k.ndim !== 4 || v.ndim !== 4)
    throw new ShapeError(`causalAttention: q, k, v must be 4-D, got [${q.shape}], [${k.shape}], [${v.shape}]`);
  const [B, Hq, T, D] = q.shape as [number, number, number, number];
  const [Bk, Hkv, S, Dk] = k.shape as [number, number, number, number];
  if (Bk !== B || Dk !== D || v.shape.some((d, i) => d !== k.shape[i]) || Hq % Hkv !== 0)
    throw new ShapeError(
      `causalAttention: q [${q.shape}] needs k, v (B, Hkv, S, D) with Hq % Hkv == 0; got k [${k.shape}], v [${v.shape}]`,
    );
  const offset = opts.queryOffset ?? S - T;
  if (!Number.isInteger(offset) || offset < 0)
    throw new ShapeError(`causalAttention: queryOffset must be a non-negative integer, got ${offset}`);
  let keyValid: Int32Array | null = null;
  if (opts.keyValid) {
    if (opts.keyValid.length !== B * S)
      throw new ShapeError(`causalAttention: keyValid has ${opts.keyValid.length} entries; expected B*S = ${B * S}`);
    keyValid = Int32Array.from(opts.keyValid);
  }
  const dims: AttentionDims = { B, Hq, Hkv, T, S, D, offset, scale: opts.scale ?? 1 / Math.sqrt(D) };
  const be = backendOf(q, k, v);
  const out = Tensor.empty(q.shape, be);
  const probs = Tensor.empty([B, Hq, T, S], be);
  be.attention(q.buf, k.buf, v.buf, out.buf, probs.buf, dims, keyValid);
  return attach(
    out,
    'causalAttention',
    [q, k, v],
    (g) => {
      const dq = Tensor.empty(q.shape, be),
        dk = Tensor.empty(k.shape, be),
        dv = Tensor.empty(v.shape, be);
      be.attentionBackward(g.buf, q.buf, k.buf, v.buf, probs.buf, dq.buf, dk.buf, dv.buf, dims);
      return [dq, dk, dv];
    },
    [probs],
  );
}

/** Inverted dropout: zero each element with probability p, scale the rest by 1 / (1 - p). Identity when p = 0. */
export function dropout(x: Tensor, p: number, rng: Rng): Tensor {
  if (!(p >= 0 && p < 1)) throw new RangeError(`dropout: p must be in [0, 1), got ${p}`);
  if (p === 0) return x;
  const m = new Float32Array(x.size);
  const keepScale = 1 / (1 - p);
  for (let i = 0; i < m.length; i++) m[i] = rng.random() < p ? 0 : keepScale;
  const mask = tensor(m, x.shape);
  return mul(x, mask);
}

/** erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26), below float32's resolution near 1. */
function erf(x: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y =
    1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return x < 0 ? -y : y;
}

/** A tensor's values in JavaScript: float64 on the js64 reference (so finite differences keep their precision). */
function valuesOf(t: Tensor): Float32Array | Float64Array {
  return t.buf instanceof Float64Array ? t.buf.slice(0, t.size) : t.backend.read(t.buf, 0, t.size);
}

/**
 * GELU, the exact (erf) form PyTorch's `nn.GELU()` computes: x * Phi(x). Elementwise in JavaScript on any backend
 * (it runs once per image in Qwen2.5-VL's patch merger, not in the decoder's hot loop).
 */
export function gelu(x: Tensor): Tensor {
  const be = x.backend;
  const xs = valuesOf(x);
  const ys = new Float64Array(x.size);
  for (let i = 0; i < xs.length; i++) ys[i] = 0.5 * xs[i]! * (1 + erf(xs[i]! * Math.SQRT1_2));
  const out = Tensor.empty(x.shape, be);
  be.write(out.buf, ys);
  return attach(out, 'gelu', [x], (g) => {
    const gs = valuesOf(g);
    const gx = new Float64Array(x.size);
    // d/dx x Phi(x) = Phi(x) + x phi(x)
    for (let i = 0; i < xs.length; i++) {
      const v = xs[i]!;
      gx[i] = gs[i]! * (0.5 * (1 + erf(v * Math.SQRT1_2)) + (v * Math.exp(-0.5 * v * v)) / Math.sqrt(2 * Math.PI));
    }
    const t = Tensor.empty(x.shape, be);
    be.write(t.buf, gx);
    return [t];
  });
}
