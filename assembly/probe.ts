// A probe of the core's f32x4 multiply-add rate: `ragen bench engine` reports it beside the wasm decode rate, as the
// ceiling any 128-bit kernel can reach on the machine.
import { madd } from './simd';

/** n rounds of 12 independent f32x4 multiply-add chains (96 flops a round); returns a lane so nothing is dead code. */
export function fmaProbe(n: i32, x: f32): f32 {
  const m = f32x4.splat(0.999), c = f32x4.splat(0.001);
  let a0 = f32x4.splat(x), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (let i = 0; i < n; i++) {
    a0 = madd(a0, m, c); a1 = madd(a1, m, c); a2 = madd(a2, m, c); a3 = madd(a3, m, c);
    a4 = madd(a4, m, c); a5 = madd(a5, m, c); a6 = madd(a6, m, c); a7 = madd(a7, m, c);
    a8 = madd(a8, m, c); a9 = madd(a9, m, c); a10 = madd(a10, m, c); a11 = madd(a11, m, c);
  }
  const s = f32x4.add(f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3)), f32x4.add(f32x4.add(a4, a5), f32x4.add(a6, a7)));
  return f32x4.extract_lane(f32x4.add(s, f32x4.add(f32x4.add(a8, a9), f32x4.add(a10, a11))), 0);
}
