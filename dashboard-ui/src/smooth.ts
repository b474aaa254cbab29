// The curves' smoothing: TensorBoard's debiased exponential moving average (pure, so vitest checks it in Node).

/**
 * s_t = w·s_{t-1} + (1−w)·x_t, divided by 1 − w^n (n = points so far) so the first points are not pulled to 0.
 * Gaps (null, non-finite) are skipped and stay gaps; weight 0 returns the values unchanged.
 */
export function smooth(values: readonly (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return [...values];
  let s = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    s = weight * s + (1 - weight) * v;
    n++;
    return s / (1 - weight ** n);
  });
}
