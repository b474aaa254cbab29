// How the update cuts a mini-batch into micro-batches (one engine.backward call each): rows of similar length whose
// padded (or packed) size fits the engine's token budget, so that each call is one pass of the torch worker and keeps
// its graph; plain runs of `maxRows` rows for an engine without a budget (local). The loss is normalised over the
// mini-batch (AggNorm), so the cut changes speed and memory, not the update (up to float rounding).
import { fitsOneChunk, type TokenBudget } from '../engine/index.js';

/**
 * Micro-batches of `rows` (indices into `lengths`). With a `budget`: rows longest first (ties by index), a row joining
 * the current micro-batch while it stays one pass of the engine on every rank and holds at most `maxRows` rows.
 * Without: consecutive runs of `maxRows` rows in the given order.
 */
export function microBatches(
  rows: readonly number[],
  lengths: ArrayLike<number>,
  maxRows: number,
  budget?: TokenBudget,
): number[][] {
  const out: number[][] = [];
  if (!budget) {
    for (let i = 0; i < rows.length; i += maxRows) out.push(rows.slice(i, i + maxRows));
    return out;
  }
  const order = [...rows].sort((a, b) => lengths[b]! - lengths[a]! || a - b);
  let cur: number[] = [];
  for (const r of order) {
    if (
      cur.length > 0 &&
      (cur.length >= maxRows ||
        !fitsOneChunk(
          [...cur, r].map((i) => lengths[i]!),
          budget,
        ))
    ) {
      out.push(cur);
      cur = [];
    }
    cur.push(r);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
