// The torch worker's rule for grouping a request's rows into chunks that fit its token budget, mirrored from
// python/ragen_torch/packing.py (`chunk_tokens` and the way `chunks` grows a chunk), so that the trainer can cut
// micro-batches that the worker
// runs as exactly one chunk each, keeping the graph and running the forward once.
import type { TokenBudget } from './types.js';

/**
 * Tokens one chunk of rows of lengths `lens` (longest first) puts through the model: rows x longest padded, or with
 * packing bins x longest, the rows placed first-fit (longest first) into bins of the longest row's length.
 */
export function chunkTokens(lens: readonly number[], packing: boolean): number {
  if (lens.length === 0) return 0;
  if (!packing) return lens.length * lens[0]!;
  const room: number[] = [];
  for (const n of lens) {
    const b = room.findIndex((left) => left >= n);
    if (b < 0) room.push(lens[0]! - n);
    else room[b]! -= n;
  }
  return room.length * lens[0]!;
}

/**
 * Whether rows of lengths `lens` (longest first, in the order they are sent) run as one chunk on every rank: rank k
 * takes rows k, k + ranks, ... (python/ragen_torch/dist.py) and chunks its own, in this same order.
 */
export function fitsOneChunk(lens: readonly number[], budget: TokenBudget): boolean {
  for (let k = 0; k < Math.min(budget.ranks, lens.length); k++) {
    const mine = lens.filter((_, i) => i % budget.ranks === k);
    // chunkTokens grows as rows are added, so the whole set fitting means the worker never closes a chunk early.
    if (mine.length > 1 && chunkTokens(mine, budget.packing) > budget.tokens) return false;
  }
  return true;
}
