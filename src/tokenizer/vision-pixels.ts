// Qwen2.5-VL's (and Qwen3-VL's) pixel values from RGB images: resize to the patch grid (Pillow's bicubic, its 8-bit
// fixed-point arithmetic), rescale by 1/255, normalize with the processor's mean and std (CLIP's for Qwen2.5-VL, 0.5
// for Qwen3-VL), repeat the frame for the temporal patch, and lay the patches out 2x2-merge-block major. Follows transformers' Qwen2VLImageProcessorPil (`patchify`) and Pillow's
// Resample.c (`precompute_coeffs`, `normalize_coeffs_8bpc`, `ImagingResampleHorizontal_8bpc`).
import { ConfigError, type RgbImage } from '../util/index.js';
import { CLIP_MEAN, CLIP_STD, imageGrid, QWEN25_VL_PROCESSOR, type VisionProcessor } from './vision.js';

export { CLIP_MEAN, CLIP_STD };

/** Frames per temporal patch: an image is repeated to fill it. */
export const TEMPORAL_PATCH_SIZE = 2;

/** The vision tower's input for a batch of images, laid out as transformers' processor gives it. */
export interface PixelValues {
  /** float32 (numPatches, 3 * temporalPatchSize * patchSize**2) row-major: a row per patch, channels outer. */
  data: Float32Array;
  /** Rows of `data`: the images' `gridH * gridW` summed. */
  numPatches: number;
  /** Values per row (1176 for patch 14). */
  patchDim: number;
  /** transformers' `image_grid_thw`: [1, gridH, gridW] per image. */
  grids: [number, number, number][];
}

/**
 * Qwen2.5-VL's preprocessor_config.json for processor settings `p` (the published one for QWEN25_VL_PROCESSOR): pixel
 * bounds, patch and merge sizes, and OpenAI CLIP's per-channel mean and std.
 */
export function qwen25PreprocessorConfig(p: VisionProcessor = QWEN25_VL_PROCESSOR): Record<string, unknown> {
  return {
    min_pixels: p.minPixels,
    max_pixels: p.maxPixels,
    patch_size: p.patchSize,
    temporal_patch_size: TEMPORAL_PATCH_SIZE,
    merge_size: p.mergeSize,
    image_mean: [...(p.imageMean ?? CLIP_MEAN)],
    image_std: [...(p.imageStd ?? CLIP_STD)],
    image_processor_type: 'Qwen2VLImageProcessor',
    processor_class: 'Qwen2_5_VLProcessor',
  };
}

/**
 * Pixel values of `images` (one after another, as the prompt's `<|image_pad|>` runs are), equal to transformers'
 * `Qwen2_5_VLProcessor(images=...)["pixel_values"]` with its default Pillow backend.
 */
export function pixelValues(images: readonly RgbImage[], p: VisionProcessor = QWEN25_VL_PROCESSOR): PixelValues {
  const P = p.patchSize;
  const M = p.mergeSize;
  const patchDim = 3 * TEMPORAL_PATCH_SIZE * P * P;
  const mean = p.imageMean ?? CLIP_MEAN;
  const std = p.imageStd ?? CLIP_STD;
  const grids: [number, number, number][] = [];
  const parts: Float32Array[] = [];
  for (const image of images) {
    checkImage(image);
    const g = imageGrid(image.height, image.width, p);
    const rgb = resizeBicubic(image, g.resizedWidth, g.resizedHeight);
    const W = g.resizedWidth;
    const out = new Float32Array(g.gridH * g.gridW * patchDim);
    let row = 0;
    // (gh/M, gw/M, M, M) patches; each row (C, T, P, P)
    for (let bh = 0; bh < g.gridH / M; bh++)
      for (let bw = 0; bw < g.gridW / M; bw++)
        for (let mh = 0; mh < M; mh++)
          for (let mw = 0; mw < M; mw++) {
            const y0 = (bh * M + mh) * P;
            const x0 = (bw * M + mw) * P;
            let o = row * patchDim;
            // (v / 255 - mean) / std in double precision, as numpy's float64 rescale does, then rounded to float32
            for (let c = 0; c < 3; c++)
              for (let t = 0; t < TEMPORAL_PATCH_SIZE; t++)
                for (let py = 0; py < P; py++)
                  for (let px = 0; px < P; px++)
                    out[o++] = (rgb.data[((y0 + py) * W + x0 + px) * 3 + c]! * (1 / 255) - mean[c]!) / std[c]!;
            row++;
          }
    grids.push([1, g.gridH, g.gridW]);
    parts.push(out);
  }
  const numPatches = grids.reduce((n, [, h, w]) => n + h * w, 0);
  const data = new Float32Array(numPatches * patchDim);
  let at = 0;
  for (const part of parts) {
    data.set(part, at);
    at += part.length;
  }
  return { data, numPatches, patchDim, grids };
}

function checkImage(image: RgbImage): void {
  if (image.data.length !== image.width * image.height * 3)
    throw new ConfigError(
      `An RGB image of ${image.width}x${image.height} needs ${image.width * image.height * 3} bytes, got ${image.data.length}; pass 3 bytes (R, G, B) per pixel, row-major.`,
    );
}

/** Pillow's bicubic kernel (a = -0.5), support 2. */
function bicubic(x: number): number {
  const a = -0.5;
  const ax = Math.abs(x);
  if (ax < 1) return ((a + 2) * ax - (a + 3)) * ax * ax + 1;
  if (ax < 2) return (((ax - 5) * ax + 8) * ax - 4) * a;
  return 0;
}

const PRECISION_BITS = 32 - 8 - 2;

/** Per output index: the first input index, and the fixed-point weights of the inputs it reads. */
function coefficients(inSize: number, outSize: number): { start: Int32Array; weights: Int32Array[] } {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = 2 * filterScale;
  const start = new Int32Array(outSize);
  const weights: Int32Array[] = [];
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    const k = new Float64Array(xmax);
    let ww = 0;
    for (let x = 0; x < xmax; x++) {
      k[x] = bicubic((x + xmin - center + 0.5) / filterScale);
      ww += k[x]!;
    }
    const fixed = new Int32Array(xmax);
    for (let x = 0; x < xmax; x++) {
      const w = ww !== 0 ? k[x]! / ww : k[x]!;
      fixed[x] = Math.trunc(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
    }
    start[xx] = xmin;
    weights.push(fixed);
  }
  return { start, weights };
}

/** One 8-bit pass along rows (`horizontal`) or columns, rounding and clamping as Pillow does. */
function pass(src: Uint8Array, w: number, h: number, outSize: number, horizontal: boolean): Uint8Array {
  const { start, weights } = coefficients(horizontal ? w : h, outSize);
  const ow = horizontal ? outSize : w;
  const oh = horizontal ? h : outSize;
  const out = new Uint8Array(ow * oh * 3);
  for (let y = 0; y < oh; y++)
    for (let x = 0; x < ow; x++)
      for (let c = 0; c < 3; c++) {
        const o = horizontal ? x : y;
        const k = weights[o]!;
        let ss = 1 << (PRECISION_BITS - 1);
        for (let i = 0; i < k.length; i++) {
          const s = horizontal ? (y * w + start[o]! + i) * 3 + c : ((start[o]! + i) * w + x) * 3 + c;
          ss += src[s]! * k[i]!;
        }
        // Math.floor(ss / 2^22) is the arithmetic shift of Pillow's 32-bit sum (which cannot overflow here).
        out[(y * ow + x) * 3 + c] = Math.min(255, Math.max(0, Math.floor(ss / (1 << PRECISION_BITS))));
      }
  return out;
}

/**
 * `image` resized to width x height with Pillow's `Image.resize(size, BICUBIC)` on an RGB image: a horizontal pass,
 * then a vertical one, each skipped when that side keeps its size (then the pixels are unchanged).
 */
export function resizeBicubic(image: RgbImage, width: number, height: number): RgbImage {
  checkImage(image);
  let data = image.data;
  if (width !== image.width) data = pass(data, image.width, image.height, width, true);
  if (height !== image.height) data = pass(data, width, image.height, height, false);
  return { width, height, data };
}
