// SIMD helpers shared by the kernels: fused multiply-add (relaxed SIMD when compiled with it) and a
// vectorised exp (Cephes-style range reduction + degree-6 polynomial, ~2 ulp), horizontal sums and max.

/** a * b + c; one FMA instruction in the relaxed-SIMD build. */
// @ts-ignore: decorator
@inline export function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(f32x4.mul(a, b), c);
}

/** exp of 4 lanes; inputs clamped to [-87.3, 88.37] (below that the true value is < 1.2e-38). */
// @ts-ignore: decorator
@inline export function exp4(v: v128): v128 {
  let x = f32x4.min(f32x4.max(v, f32x4.splat(-87.3)), f32x4.splat(88.3762626647949));
  const fx = f32x4.floor(madd(x, f32x4.splat(1.44269504088896341), f32x4.splat(0.5)));
  x = f32x4.sub(x, f32x4.mul(fx, f32x4.splat(0.693359375)));
  x = f32x4.sub(x, f32x4.mul(fx, f32x4.splat(-2.12194440e-4)));
  let y = f32x4.splat(1.9875691500e-4);
  y = madd(y, x, f32x4.splat(1.3981999507e-3));
  y = madd(y, x, f32x4.splat(8.3334519073e-3));
  y = madd(y, x, f32x4.splat(4.1665795894e-2));
  y = madd(y, x, f32x4.splat(1.6666665459e-1));
  y = madd(y, x, f32x4.splat(5.0000001201e-1));
  y = madd(y, f32x4.mul(x, x), f32x4.add(x, f32x4.splat(1.0)));
  const n = i32x4.trunc_sat_f32x4_s(fx);
  const pow2n = i32x4.shl(i32x4.add(n, i32x4.splat(127)), 23);
  return f32x4.mul(y, pow2n);
}

/** Scalar exp with the same accuracy as exp4 lanes (keeps tails consistent with vector bodies). */
// @ts-ignore: decorator
@inline export function exp1(x: f32): f32 {
  return f32x4.extract_lane(exp4(f32x4.splat(x)), 0);
}

/** Horizontal sum of 4 lanes. */
// @ts-ignore: decorator
@inline export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

/** Horizontal max of 4 lanes. */
// @ts-ignore: decorator
@inline export function hmax(v: v128): f32 {
  return max(max(f32x4.extract_lane(v, 0), f32x4.extract_lane(v, 1)), max(f32x4.extract_lane(v, 2), f32x4.extract_lane(v, 3)));
}

/** Lane j of the result = the sum of the lanes of sj (a transpose-and-add). */
// @ts-ignore: decorator
@inline export function hsum4x4(s0: v128, s1: v128, s2: v128, s3: v128): v128 {
  const t0 = f32x4.add(v128.shuffle<f32>(s0, s1, 0, 4, 1, 5), v128.shuffle<f32>(s0, s1, 2, 6, 3, 7)); // s0a s1a s0b s1b
  const t1 = f32x4.add(v128.shuffle<f32>(s2, s3, 0, 4, 1, 5), v128.shuffle<f32>(s2, s3, 2, 6, 3, 7));
  return f32x4.add(v128.shuffle<f32>(t0, t1, 0, 1, 4, 5), v128.shuffle<f32>(t0, t1, 2, 3, 6, 7));
}
