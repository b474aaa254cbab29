// RAGEN-2's gradient-analysis buckets (inventory 3.5): rollout groups ranked by their in-group reward std and cut
// into equal-count buckets, lowest std first, so each bucket's gradient shows what groups of that signal level give.

/**
 * The groups of each bucket, as indices into `groupStd`, bucket 1 (lowest reward std) first. The groups are sorted by
 * reward std (ties keep their order) and cut into `k` runs of ⌊G/k⌋ groups; the remainder joins the last (highest-std)
 * bucket, as RAGEN's `split_into_buckets` does (its later code; an earlier version used fixed std edges 0.2, 0.5,
 * 1, 2, 3, 5). Ranks keep every bucket filled whatever the reward scale; each bucket's reward-std range is logged
 * with it. With fewer groups than buckets, the first buckets are empty and every group is in the last.
 */
export function rewardStdBuckets(groupStd: ArrayLike<number>, k: number): number[][] {
  if (!Number.isInteger(k) || k < 1)
    throw new RangeError(`rewardStdBuckets: the bucket count must be an integer >= 1, got ${k}.`);
  const G = groupStd.length;
  for (let g = 0; g < G; g++) {
    if (!Number.isFinite(groupStd[g]!))
      throw new RangeError(`rewardStdBuckets: group ${g} has a non-finite reward std (${groupStd[g]}).`);
  }
  const order = Array.from({ length: G }, (_, g) => g).sort((a, b) => groupStd[a]! - groupStd[b]! || a - b);
  const size = Math.floor(G / k);
  return Array.from({ length: k }, (_, b) => order.slice(b * size, b === k - 1 ? G : (b + 1) * size));
}

/** The name of bucket `i` (0-based) in metric keys: `bucket_1` is the lowest reward std. */
export const bucketName = (i: number): string => `bucket_${i + 1}`;
