// Qwen2.5-VL's vision tower: patch embedding (the Conv3d as a linear over each flattened patch), RMSNorm / SwiGLU
// blocks with 2-D rotary attention, windowed in most blocks and over the whole image in `fullatt_block_indexes`, and
// the patch merger (2x2 neighbours concatenated, RMSNorm, MLP with GELU). Follows transformers'
// Qwen2_5_VisionTransformerPretrainedModel (5.17) and `get_vision_window_index`.
import {
  add,
  causalAttention,
  concat,
  embedding,
  gelu,
  keep,
  linear,
  narrow,
  noGrad,
  permute,
  randn,
  rmsNorm,
  swiglu,
  tensor,
  ones,
  zeros,
  type Tensor,
} from '../tensor/index.js';
import { CheckpointError, Rng } from '../util/index.js';
import type { VisionConfig } from './qwen2-vl-config.js';
import { applyRotary, visionRotary, type GridTHW } from './qwen2-vl-rotary.js';
import { expectWeight, type WeightMap } from './safetensors.js';

/** The vision tower's weight names (the published checkpoints' `visual.*`) and shapes. */
export function visionWeightShapes(c: VisionConfig): Map<string, number[]> {
  const E = c.hiddenSize;
  const F = c.intermediateSize;
  const P = c.patchSize;
  const M = E * c.spatialMergeSize ** 2;
  const shapes = new Map<string, number[]>([
    ['visual.patch_embed.proj.weight', [E, c.inChannels, c.temporalPatchSize, P, P]],
  ]);
  for (let i = 0; i < c.depth; i++) {
    const p = `visual.blocks.${i}.`;
    shapes.set(`${p}norm1.weight`, [E]);
    shapes.set(`${p}norm2.weight`, [E]);
    shapes.set(`${p}attn.qkv.weight`, [3 * E, E]);
    shapes.set(`${p}attn.qkv.bias`, [3 * E]);
    shapes.set(`${p}attn.proj.weight`, [E, E]);
    shapes.set(`${p}attn.proj.bias`, [E]);
    for (const [name, shape] of [
      ['gate_proj', [F, E]],
      ['up_proj', [F, E]],
      ['down_proj', [E, F]],
    ] as const) {
      shapes.set(`${p}mlp.${name}.weight`, [...shape]);
      shapes.set(`${p}mlp.${name}.bias`, [shape[0]]);
    }
  }
  shapes.set('visual.merger.ln_q.weight', [E]);
  shapes.set('visual.merger.mlp.0.weight', [M, M]);
  shapes.set('visual.merger.mlp.0.bias', [M]);
  shapes.set('visual.merger.mlp.2.weight', [c.outHiddenSize, M]);
  shapes.set('visual.merger.mlp.2.bias', [c.outHiddenSize]);
  return shapes;
}

/**
 * transformers' `get_vision_window_index`: the merged patches (units of mergeSize**2 rows) reordered window by window
 * (each window `windowSize / mergeSize / patchSize` units a side, cut short at the image's edge), and the patch count
 * of each window.
 */
export function visionWindows(
  grids: readonly GridTHW[],
  c: Pick<VisionConfig, 'spatialMergeSize' | 'windowSize' | 'patchSize'>,
): { unitOrder: Int32Array; windowPatches: number[] } {
  const win = Math.floor(c.windowSize / c.spatialMergeSize / c.patchSize);
  const unit = c.spatialMergeSize ** 2;
  const order: number[] = [];
  const windowPatches: number[] = [];
  let base = 0;
  for (const [t, gh, gw] of grids) {
    const h = gh / c.spatialMergeSize;
    const w = gw / c.spatialMergeSize;
    for (let f = 0; f < t; f++)
      for (let wy = 0; wy < h; wy += win)
        for (let wx = 0; wx < w; wx += win) {
          let n = 0;
          for (let y = wy; y < Math.min(wy + win, h); y++)
            for (let x = wx; x < Math.min(wx + win, w); x++, n++) order.push(base + (f * h + y) * w + x);
          windowPatches.push(n * unit);
        }
    base += t * h * w;
  }
  return { unitOrder: Int32Array.from(order), windowPatches };
}

/** The (h, w) patch coordinates of every pixel-values row: merge blocks row-major, then the patches inside each. */
export function patchCoordinates(grids: readonly GridTHW[], mergeSize: number): Int32Array {
  const out: number[] = [];
  for (const [t, gh, gw] of grids)
    for (let f = 0; f < t; f++)
      for (let bh = 0; bh < gh / mergeSize; bh++)
        for (let bw = 0; bw < gw / mergeSize; bw++)
          for (let mh = 0; mh < mergeSize; mh++)
            for (let mw = 0; mw < mergeSize; mw++) out.push(bh * mergeSize + mh, bw * mergeSize + mw);
  return Int32Array.from(out);
}

/** Qwen2.5-VL's vision encoder: pixel values in, one embedding per merged patch (an `<|image_pad|>` token) out. */
export class VisionTower {
  constructor(
    readonly config: VisionConfig,
    /** Weights by their checkpoint names (`visual.*`). */
    readonly weights: Map<string, Tensor>,
  ) {}

  /** Seeded random weights as transformers initialises them (normal(0, 0.02), zero biases, unit norms). */
  static init(config: VisionConfig, seed = 0, std = 0.02): VisionTower {
    const rng = new Rng(seed);
    const weights = new Map<string, Tensor>();
    for (const [name, shape] of visionWeightShapes(config)) {
      const t = name.endsWith('norm1.weight') || name.endsWith('norm2.weight') || name.endsWith('ln_q.weight');
      weights.set(name, keep(t ? ones(shape) : name.endsWith('.bias') ? zeros(shape) : randn(shape, rng, std)));
    }
    return new VisionTower(config, weights);
  }

  /** The tower from loaded weights (frozen unless `trainable`); throws CheckpointError naming a missing tensor. */
  static fromWeights(config: VisionConfig, loaded: WeightMap, source: string, trainable = false): VisionTower {
    const weights = new Map<string, Tensor>();
    for (const [name, shape] of visionWeightShapes(config))
      weights.set(
        name,
        keep(tensor(expectWeight(loaded, name, shape, source).data, shape, { requiresGrad: trainable })),
      );
    return new VisionTower(config, weights);
  }

  private w(name: string): Tensor {
    const t = this.weights.get(`visual.${name}`);
    if (!t) throw new CheckpointError(`VisionTower: weight visual.${name} is missing`);
    return t;
  }

  /**
   * Embeddings (numPatches / mergeSize**2, outHiddenSize) of `pixels` (numPatches, patchDim row-major, as
   * `pixelValues` gives them) for images with patch grids `grids`, in the order of the images' `<|image_pad|>` tokens.
   */
  forward(pixels: Float32Array, grids: readonly GridTHW[]): Tensor {
    const c = this.config;
    const E = c.hiddenSize;
    const nh = c.numHeads;
    const hd = E / nh;
    const unit = c.spatialMergeSize ** 2;
    const N = grids.reduce((n, [t, h, w]) => n + t * h * w, 0);
    const patchDim = c.inChannels * c.temporalPatchSize * c.patchSize ** 2;
    if (pixels.length !== N * patchDim)
      throw new CheckpointError(
        `VisionTower: ${pixels.length} pixel values for grids ${JSON.stringify(grids)}; expected ${N} patches x ${patchDim}`,
      );
    const { unitOrder, windowPatches } = visionWindows(grids, c);
    // Rows in window order: unit u's rows follow each other.
    const rowOrder = new Int32Array(N);
    unitOrder.forEach((u, j) => {
      for (let r = 0; r < unit; r++) rowOrder[j * unit + r] = u * unit + r;
    });
    const coords = patchCoordinates(grids, c.spatialMergeSize);
    const hw = new Int32Array(2 * N);
    rowOrder.forEach((r, i) => {
      hw[2 * i] = coords[2 * r]!;
      hw[2 * i + 1] = coords[2 * r + 1]!;
    });
    const rot = visionRotary(hw, hd, c.ropeTheta);
    const cos = tensor(rot.cos, [N, hd]);
    const sin = tensor(rot.sin, [N, hd]);
    const fullSpans = grids.flatMap(([t, h, w]) => new Array<number>(t).fill(h * w));

    const patchW = this.w('patch_embed.proj.weight').reshape(E, patchDim);
    let h = embedding(linear(tensor(pixels, [N, patchDim]), patchW), rowOrder); // (N, E) in window order
    for (let i = 0; i < c.depth; i++) {
      const p = `blocks.${i}.`;
      const spans = c.fullattBlockIndexes.includes(i) ? fullSpans : windowPatches;
      const x = rmsNorm(h, this.w(`${p}norm1.weight`), 1e-6);
      const qkv = linear(x, this.w(`${p}attn.qkv.weight`), this.w(`${p}attn.qkv.bias`)); // (N, 3E)
      const heads = (at: number) => permute(narrow(qkv, 1, at * E, E).reshape(1, N, nh, hd), [0, 2, 1, 3]); // (1, nh, N, hd)
      const q = applyRotary(heads(0), cos, sin);
      const k = applyRotary(heads(1), cos, sin);
      const v = heads(2);
      const outs: Tensor[] = [];
      let s = 0;
      for (const len of spans) {
        if (len === 0) continue;
        const part = (t: Tensor) => narrow(t, 2, s, len);
        // queryOffset len - 1: every query sees every key of its span (no causal mask).
        outs.push(causalAttention(part(q), part(k), part(v), { queryOffset: len - 1 }));
        s += len;
      }
      const att = permute(outs.length === 1 ? outs[0]! : concat(outs, 2), [0, 2, 1, 3]).reshape(N, E);
      h = add(h, linear(att, this.w(`${p}attn.proj.weight`), this.w(`${p}attn.proj.bias`)));
      const x2 = rmsNorm(h, this.w(`${p}norm2.weight`), 1e-6);
      const gate = linear(x2, this.w(`${p}mlp.gate_proj.weight`), this.w(`${p}mlp.gate_proj.bias`));
      const up = linear(x2, this.w(`${p}mlp.up_proj.weight`), this.w(`${p}mlp.up_proj.bias`));
      h = add(h, linear(swiglu(gate, up), this.w(`${p}mlp.down_proj.weight`), this.w(`${p}mlp.down_proj.bias`)));
    }
    const merged = rmsNorm(h, this.w('merger.ln_q.weight'), 1e-6).reshape(N / unit, unit * E);
    const hidden = gelu(linear(merged, this.w('merger.mlp.0.weight'), this.w('merger.mlp.0.bias')));
    const out = linear(hidden, this.w('merger.mlp.2.weight'), this.w('merger.mlp.2.bias')); // (units, out), window order
    // Back to the images' order: unit u sits at its place j in the window order.
    const back = new Int32Array(unitOrder.length);
    unitOrder.forEach((u, j) => (back[u] = j));
    return embedding(out, back);
  }

  /** Free the weights. */
  dispose(): void {
    noGrad(() => {
      for (const t of this.weights.values()) t.dispose();
    });
  }
}
