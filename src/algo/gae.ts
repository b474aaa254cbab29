// Generalized Advantage Estimation over padded token sequences (Schulman et al. 2016), veRL's
// multi-turn variant that skips non-policy tokens, the turn-level (bi-level) GAE, and masked whitening.
import { ShapeError } from '../util/index.js';
import { checkTokens, type TokenMask, type Nums } from './shape.js';

/** Advantages and value targets, both (B, T) flat, 0 off the loss mask. */
export interface AdvantageReturns {
  advantages: Float64Array;
  returns: Float64Array;
}

function checkRewardsOnMask(rewards: Nums, mask: TokenMask, B: number, T: number): void {
  for (let i = 0; i < B * T; i++) {
    if (!mask[i] && rewards[i] !== 0) {
      throw new ShapeError(
        `reward ${rewards[i]} at (b=${Math.floor(i / T)}, t=${i % T}) lies on a token outside the loss mask, where GAE ignores it; ` +
          'place each reward on a policy token (e.g. the last generated token of its turn).',
      );
    }
  }
}

/**
 * GAE(γ, λ) over token sequences, as veRL's `compute_gae_advantage_return`:
 * backwards over t, δ_t = r_t + γ·V_next − V_t and A_t = δ_t + γλ·A_next (Schulman et al. 2016, eq. 16),
 * where at tokens off the loss mask (observations, padding) V_next and A_next are carried through
 * unchanged, so environment tokens neither discount nor break the chain. returns = A + V.
 *
 * The advantages are NOT whitened here (veRL whitens inside); `computeAdvantage` applies
 * `maskedWhiten` for the `gae` estimator. Differences from veRL: entries off the mask are 0 instead
 * of the carried value, and a non-zero reward off the mask is an error (veRL drops it silently).
 */
export function gae(a: {
  rewards: Nums;
  values: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  gamma: number;
  lambda: number;
}): AdvantageReturns {
  const { rewards, values, mask, B, T, gamma, lambda } = a;
  checkTokens('rewards', rewards, B, T);
  checkTokens('values', values, B, T);
  checkTokens('mask', mask, B, T);
  checkRewardsOnMask(rewards, mask, B, T);
  const advantages = new Float64Array(B * T);
  const returns = new Float64Array(B * T);
  for (let b = 0; b < B; b++) {
    let nextValue = 0;
    let lastAdv = 0;
    for (let t = T - 1; t >= 0; t--) {
      const i = b * T + t;
      if (!mask[i]) continue; // carry nextValue and lastAdv across non-policy tokens
      const delta = rewards[i]! + gamma * nextValue - values[i]!;
      lastAdv = delta + gamma * lambda * lastAdv;
      nextValue = values[i]!;
      advantages[i] = lastAdv;
      returns[i] = lastAdv + values[i]!;
    }
  }
  return { advantages, returns };
}

/**
 * Turn spans of one row: for each turn, its loss-token positions in order. Turns come from
 * `turnIds` (per token; -1 = no turn) when given, else each maximal run of loss tokens is a turn.
 */
function rowTurns(b: number, T: number, mask: TokenMask, turnIds?: Nums): number[][] {
  const turns: number[][] = [];
  let lastId = NaN;
  for (let t = 0; t < T; t++) {
    const i = b * T + t;
    if (turnIds === undefined) {
      if (mask[i] && (t === 0 || !mask[i - 1])) turns.push([]);
      if (mask[i]) turns[turns.length - 1]!.push(t);
      continue;
    }
    const id = turnIds[i]!;
    if (id < 0) {
      if (mask[i])
        throw new ShapeError(
          `loss token (b=${b}, t=${t}) has turnId ${id}; every loss token must belong to a turn (id >= 0).`,
        );
      continue;
    }
    if (id !== lastId) {
      if (id < lastId)
        throw new ShapeError(`turnIds must not decrease along a row; (b=${b}, t=${t}) has ${id} after ${lastId}.`);
      turns.push([]);
      lastId = id;
    }
    if (mask[i]) turns[turns.length - 1]!.push(t);
  }
  return turns.filter((tt) => tt.length > 0);
}

/**
 * Turn-level (bi-level) GAE, the hierarchical estimator RAGEN sketches (`bi_level_gae`), done properly:
 * 1. Each turn k gets its reward r_k (the sum of token rewards from its first loss token up to the next
 *    turn's first loss token) and its value V_k (the critic's value at its last loss token).
 * 2. High level, over turns: δ_k = r_k + γ_turn·V_{k+1} − V_k, A_k = δ_k + γ_turn·λ_turn·A_{k+1},
 *    and the turn's λ-return G_k = A_k + V_k.
 * 3. Token level, inside each turn: GAE(γ, λ) whose only reward is G_k at the turn's last token,
 *    with no bootstrap past it (so A_last = G_k − V_last, and with γ = λ = 1, A_t = G_k − V_t).
 *
 * Fixes of RAGEN's `compute_bi_level_gae_advantage_return`: turns come from the turn structure
 * (`turnIds` or runs of loss tokens), not from tokens with non-zero reward, so a turn whose reward is 0
 * is still a boundary (RAGEN chained its tokens into the next turn with the token γ); per-turn rewards
 * are supported (RAGEN's train.py forbids turn scores with it, so only the last token had a reward and
 * the estimator degenerated to plain GAE). Not whitened here (see `computeAdvantage`).
 */
export function biLevelGae(a: {
  rewards: Nums;
  values: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  gamma: number;
  lambda: number;
  gammaTurn: number;
  lambdaTurn?: number;
  turnIds?: Nums;
}): AdvantageReturns {
  const { rewards, values, mask, B, T, gamma, lambda, gammaTurn, turnIds } = a;
  const lambdaTurn = a.lambdaTurn ?? lambda;
  checkTokens('rewards', rewards, B, T);
  checkTokens('values', values, B, T);
  checkTokens('mask', mask, B, T);
  if (turnIds !== undefined) checkTokens('turnIds', turnIds, B, T);
  const advantages = new Float64Array(B * T);
  const returns = new Float64Array(B * T);
  for (let b = 0; b < B; b++) {
    const turns = rowTurns(b, T, mask, turnIds);
    const K = turns.length;
    const turnReward = new Float64Array(K);
    for (let t = 0, k = -1; t < T; t++) {
      while (k + 1 < K && turns[k + 1]![0] === t) k++;
      const r = rewards[b * T + t]!;
      if (r === 0) continue;
      if (k < 0)
        throw new ShapeError(
          `reward ${r} at (b=${b}, t=${t}) comes before the row's first turn; it belongs to no turn.`,
        );
      turnReward[k]! += r;
    }
    // High level over turns.
    const G = new Float64Array(K);
    let nextV = 0;
    let lastA = 0;
    for (let k = K - 1; k >= 0; k--) {
      const tt = turns[k]!;
      const v = values[b * T + tt[tt.length - 1]!]!;
      const delta = turnReward[k]! + gammaTurn * nextV - v;
      lastA = delta + gammaTurn * lambdaTurn * lastA;
      G[k] = lastA + v;
      nextV = v;
    }
    // Token level inside each turn.
    for (let k = 0; k < K; k++) {
      const tt = turns[k]!;
      let nv = 0;
      let la = 0;
      for (let j = tt.length - 1; j >= 0; j--) {
        const i = b * T + tt[j]!;
        const r = j === tt.length - 1 ? G[k]! : 0;
        const delta = r + gamma * nv - values[i]!;
        la = delta + gamma * lambda * la;
        nv = values[i]!;
        advantages[i] = la;
        returns[i] = la + values[i]!;
      }
    }
  }
  return { advantages, returns };
}

/**
 * Masked whitening (veRL `masked_whiten`): (x − mean) / sqrt(var + 1e-8) over the loss tokens of the
 * whole batch, var with Bessel's correction. `shiftMean=false` adds the mean back. Entries off the mask
 * are 0. Difference from veRL: a single loss token gives var 0 instead of raising.
 */
export function maskedWhiten(x: Nums, mask: TokenMask, shiftMean = true): Float64Array {
  if (x.length !== mask.length)
    throw new ShapeError(`maskedWhiten: x has length ${x.length} but mask has ${mask.length}.`);
  let n = 0;
  let s = 0;
  for (let i = 0; i < x.length; i++) {
    if (mask[i]) {
      n++;
      s += x[i]!;
    }
  }
  const out = new Float64Array(x.length);
  if (n === 0) return out;
  const mean = s / n;
  let ss = 0;
  for (let i = 0; i < x.length; i++) if (mask[i]) ss += (x[i]! - mean) ** 2;
  const variance = n > 1 ? ss / (n - 1) : 0;
  const inv = 1 / Math.sqrt(variance + 1e-8);
  for (let i = 0; i < x.length; i++) {
    if (mask[i]) out[i] = (x[i]! - mean) * inv + (shiftMean ? 0 : mean);
  }
  return out;
}
