// Reference loops of the fused neural-net kernels: rotary embedding, log-prob of target, entropy, attention.
// Plain and obviously correct; the WASM and native kernels are tested against these.

import type { AttentionDims } from './backend.js';

/** The arrays the reference kernels run on: float32 (`js`) or float64 (`js64`, the oracle of gradient checks). */
export type FArr = Float32Array | Float64Array;

/** Inverse frequencies of HF's rotary embedding, rounded to float32 as torch computes them. */
export function ropeInvFreq(D: number, theta: number): Float32Array {
  const half = D / 2;
  const f = new Float32Array(half);
  for (let i = 0; i < half; i++) f[i] = 1 / Math.fround(Math.pow(theta, Math.fround((2 * i) / D)));
  return f;
}

/** The rotary angle of a position and frequency, rounded like torch's float32 product. */
export function ropeAngle(pos: number, invFreq: number): number {
  return Math.fround(pos * invFreq);
}

export function refRope(
  x: FArr,
  o: FArr,
  B: number,
  H: number,
  T: number,
  D: number,
  positions: Int32Array,
  theta: number,
  inverse: boolean,
): void {
  const half = D / 2;
  const inv = ropeInvFreq(D, theta);
  const perBatch = positions.length === B * T;
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++) {
        const pos = positions[perBatch ? b * T + t : t]!;
        const base = ((b * H + h) * T + t) * D;
        for (let i = 0; i < half; i++) {
          const ang = ropeAngle(pos, inv[i]!);
          const c = Math.cos(ang),
            s = inverse ? -Math.sin(ang) : Math.sin(ang);
          const x1 = x[base + i]!,
            x2 = x[base + i + half]!;
          o[base + i] = x1 * c - x2 * s;
          o[base + i + half] = x2 * c + x1 * s;
        }
      }
}

function rowLse(x: FArr, off: number, V: number): number {
  let mx = -Infinity;
  for (let j = 0; j < V; j++) mx = Math.max(mx, x[off + j]!);
  let s = 0;
  for (let j = 0; j < V; j++) s += Math.exp(x[off + j]! - mx);
  return mx + Math.log(s);
}

export function refLogprobTarget(x: FArr, targets: Int32Array, out: FArr, lse: FArr, N: number, V: number): void {
  for (let n = 0; n < N; n++) {
    const l = rowLse(x, n * V, V);
    lse[n] = l;
    out[n] = x[n * V + targets[n]!]! - l;
  }
}

export function refLogprobTargetBackward(
  g: FArr,
  x: FArr,
  targets: Int32Array,
  lse: FArr,
  dx: FArr,
  N: number,
  V: number,
): void {
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < V; j++) dx[n * V + j] = -g[n]! * Math.exp(x[n * V + j]! - lse[n]!);
    dx[n * V + targets[n]!]! += g[n]!;
  }
}

export function refEntropy(x: FArr, out: FArr, lse: FArr, N: number, V: number): void {
  for (let n = 0; n < N; n++) {
    const l = rowLse(x, n * V, V);
    lse[n] = l;
    let px = 0;
    for (let j = 0; j < V; j++) px += Math.exp(x[n * V + j]! - l) * x[n * V + j]!;
    out[n] = l - px;
  }
}

export function refEntropyBackward(g: FArr, x: FArr, lse: FArr, ent: FArr, dx: FArr, N: number, V: number): void {
  for (let n = 0; n < N; n++)
    for (let j = 0; j < V; j++) {
      const lp = x[n * V + j]! - lse[n]!;
      dx[n * V + j] = -g[n]! * Math.exp(lp) * (lp + ent[n]!);
    }
}

/** Key s is visible from query t of batch b. */
function visible(d: AttentionDims, keyValid: Int32Array | null, b: number, t: number, s: number): boolean {
  return s <= d.offset + t && (keyValid === null || keyValid[b * d.S + s] !== 0);
}

export function refAttention(
  q: FArr,
  k: FArr,
  v: FArr,
  out: FArr,
  probs: FArr,
  d: AttentionDims,
  keyValid: Int32Array | null,
): void {
  const { B, Hq, Hkv, T, S, D } = d;
  const group = Hq / Hkv;
  const sc = new Float64Array(S);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < Hq; h++) {
      const kvh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        const qo = ((b * Hq + h) * T + t) * D,
          po = ((b * Hq + h) * T + t) * S;
        let mx = -Infinity;
        for (let s = 0; s < S; s++) {
          if (!visible(d, keyValid, b, t, s)) continue;
          const ko = ((b * Hkv + kvh) * S + s) * D;
          let dot = 0;
          for (let i = 0; i < D; i++) dot += q[qo + i]! * k[ko + i]!;
          sc[s] = dot * d.scale;
          mx = Math.max(mx, sc[s]!);
        }
        let sum = 0;
        for (let s = 0; s < S; s++) {
          sc[s] = visible(d, keyValid, b, t, s) ? Math.exp(sc[s]! - mx) : 0;
          sum += sc[s]!;
        }
        for (let i = 0; i < D; i++) out[qo + i] = 0;
        for (let s = 0; s < S; s++) {
          const p = sum > 0 ? sc[s]! / sum : 0;
          probs[po + s] = p;
          const vo = ((b * Hkv + kvh) * S + s) * D;
          for (let i = 0; i < D; i++) out[qo + i]! += p * v[vo + i]!;
        }
      }
    }
}

export function refAttentionBackward(
  g: FArr,
  q: FArr,
  k: FArr,
  v: FArr,
  probs: FArr,
  dq: FArr,
  dk: FArr,
  dv: FArr,
  d: AttentionDims,
): void {
  const { B, Hq, Hkv, T, S, D } = d;
  const group = Hq / Hkv;
  dk.fill(0, 0, B * Hkv * S * D);
  dv.fill(0, 0, B * Hkv * S * D);
  const ds = new Float64Array(S);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < Hq; h++) {
      const kvh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        const qo = ((b * Hq + h) * T + t) * D,
          po = ((b * Hq + h) * T + t) * S;
        let dot = 0;
        for (let s = 0; s < S; s++) {
          const vo = ((b * Hkv + kvh) * S + s) * D;
          let dp = 0;
          for (let i = 0; i < D; i++) dp += g[qo + i]! * v[vo + i]!;
          ds[s] = dp;
          dot += dp * probs[po + s]!;
        }
        for (let i = 0; i < D; i++) dq[qo + i] = 0;
        for (let s = 0; s < S; s++) {
          const p = probs[po + s]!;
          if (p === 0) continue;
          const dsc = p * (ds[s]! - dot) * d.scale;
          const ko = ((b * Hkv + kvh) * S + s) * D;
          for (let i = 0; i < D; i++) {
            dq[qo + i]! += dsc * k[ko + i]!;
            dk[ko + i]! += dsc * q[qo + i]!;
            dv[ko + i]! += p * g[qo + i]!;
          }
        }
      }
    }
}
