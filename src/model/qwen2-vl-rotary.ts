// Qwen2.5-VL's rotary positions: the vision tower's 2-D (height, width) rotary and the language model's multimodal
// 3-D (temporal, height, width) rotary with its `mrope_section` split, as cos / sin tables applied with rotate_half.
// Follows transformers' Qwen2_5_VLVisionRotaryEmbedding, Qwen2_5_VLRotaryEmbedding and Qwen2_5_VLModel.get_rope_index.
import { add, concat, mul, narrow, neg, type Tensor } from '../tensor/index.js';
import { ConfigError } from '../util/index.js';

/** cos and sin of every position's angles, (N, D) row-major. */
export interface RotaryTables {
  cos: Float32Array;
  sin: Float32Array;
}

/** x * cos + rotate_half(x) * sin over the last dim D of x; cos and sin broadcast against x (e.g. (T, D) tables). */
export function applyRotary(x: Tensor, cos: Tensor, sin: Tensor): Tensor {
  const last = x.ndim - 1;
  const D = x.shape[last]!;
  const rotated = concat([neg(narrow(x, last, D / 2, D / 2)), narrow(x, last, 0, D / 2)], last);
  return add(mul(x, cos), mul(rotated, sin));
}

/** `base ** -(2j / dim)` for j < dim / 2, in float32 as torch computes it. */
function inverseFrequencies(dim: number, base: number): Float64Array {
  return Float64Array.from({ length: dim / 2 }, (_, j) => Math.fround(1 / Math.fround(base ** ((2 * j) / dim))));
}

/** Tables (N, D) where angle j of row n is `axisPosition(n, axisOf(j)) * freq[j mod D/2]`, repeated over both halves. */
function tables(
  N: number,
  D: number,
  freq: (j: number) => number,
  position: (n: number, j: number) => number,
): RotaryTables {
  const cos = new Float32Array(N * D);
  const sin = new Float32Array(N * D);
  for (let n = 0; n < N; n++)
    for (let j = 0; j < D / 2; j++) {
      const a = Math.fround(position(n, j) * freq(j));
      cos[n * D + j] = cos[n * D + j + D / 2] = Math.cos(a);
      sin[n * D + j] = sin[n * D + j + D / 2] = Math.sin(a);
    }
  return { cos, sin };
}

/**
 * The vision tower's 2-D rotary for patches at (h, w) (`hw`: 2N entries): the first quarter of each head's angles
 * rotate by h, the second by w, with `head_dim / 4` frequencies of base `theta` over `head_dim / 2`.
 */
export function visionRotary(hw: Int32Array, headDim: number, theta: number): RotaryTables {
  const inv = inverseFrequencies(headDim / 2, theta);
  const q = headDim / 4;
  return tables(
    hw.length / 2,
    headDim,
    (j) => inv[j % q]!,
    (n, j) => hw[2 * n + (j < q ? 0 : 1)]!,
  );
}

/**
 * The language model's multimodal rotary for 3-D positions (`pos`: (3, T), temporal row first): frequency j of a
 * head takes the temporal, height or width position by `section` ([16, 24, 24] for the published models).
 */
export function mropeRotary(
  pos: Int32Array,
  T: number,
  headDim: number,
  theta: number,
  section: readonly [number, number, number],
): RotaryTables {
  const inv = inverseFrequencies(headDim, theta);
  const axis = new Int32Array(headDim / 2);
  for (let j = 0; j < headDim / 2; j++) axis[j] = j < section[0] ? 0 : j < section[0] + section[1] ? 1 : 2;
  return tables(
    T,
    headDim,
    (j) => inv[j]!,
    (n, j) => pos[axis[j]! * T + n]!,
  );
}

/** An image's patch grid as transformers' `image_grid_thw`: [t, h, w] in patches (before the merge). */
export type GridTHW = readonly [number, number, number];

/**
 * transformers' `get_rope_index` for one sequence: text tokens count up on all three axes; the `<|image_pad|>` run of
 * an image with merged grid (h', w') takes (start, start + row, start + col), and the text after it continues from
 * start + max(h', w'). Returns the positions (3, T), temporal row first, and `delta` (max position + 1 - T): tokens
 * generated after the prompt take position `index + delta` on every axis.
 */
export function mropePositions(
  ids: ArrayLike<number>,
  grids: readonly GridTHW[],
  imageTokenId: number,
  mergeSize: number,
): { positions: Int32Array; delta: number } {
  const T = ids.length;
  const pos = new Int32Array(3 * T);
  let next = 0;
  let image = 0;
  let max = -1;
  for (let i = 0; i < T;) {
    if (ids[i] !== imageTokenId) {
      for (let a = 0; a < 3; a++) pos[a * T + i] = next;
      max = Math.max(max, next);
      next++;
      i++;
      continue;
    }
    const grid = grids[image++];
    if (!grid)
      throw new ConfigError(
        `The prompt has more <|image_pad|> runs than the ${grids.length} image(s) given; each image's run must be widened to its tokens (expandImagePads).`,
      );
    const [t, h, w] = [grid[0], grid[1] / mergeSize, grid[2] / mergeSize];
    const n = t * h * w;
    for (let k = 0; k < n; k++) {
      if (ids[i + k] !== imageTokenId)
        throw new ConfigError(
          `Image ${image - 1} (grid [${grid.join(', ')}]) needs ${n} <|image_pad|> tokens in a row; the run at token ${i} has ${k}.`,
        );
      const tt = Math.floor(k / (h * w));
      const r = Math.floor((k % (h * w)) / w);
      const c = k % w;
      pos[i + k] = next + tt;
      pos[T + i + k] = next + r;
      pos[2 * T + i + k] = next + c;
      max = Math.max(max, next + tt, next + r, next + c);
    }
    i += n;
    next += Math.max(h, w);
  }
  if (image !== grids.length)
    throw new ConfigError(`The prompt has ${image} <|image_pad|> run(s) for ${grids.length} image(s).`);
  return { positions: pos, delta: max + 1 - T };
}
