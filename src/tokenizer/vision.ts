// Images in Qwen2.5-VL prompts: the vision tokens a chat message's image becomes. The template writes each image as
// `<|vision_start|><|image_pad|><|vision_end|>` (as Qwen2.5-VL's chat template does) and the processor widens the one
// `<|image_pad|>` to the image's patch count after the 2x2 merge. Follows transformers' Qwen2VLImageProcessor
// (`smart_resize`) and Qwen2_5_VLProcessor (`image_grid_thw.prod() // merge_size**2` pads per image).
import { ConfigError, type RgbImage } from '../util/index.js';

export const VISION_START = '<|vision_start|>';
export const IMAGE_PAD = '<|image_pad|>';
export const VISION_END = '<|vision_end|>';
/** Where a message's image sits in its content before the processor widens it. */
export const IMAGE_PLACEHOLDER = `${VISION_START}${IMAGE_PAD}${VISION_END}`;

/** OpenAI CLIP's per-channel mean and std, Qwen2.5-VL's preprocessor_config.json `image_mean` / `image_std`. */
export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;

/** The image processor's settings (preprocessor_config.json's names in camelCase). */
export interface VisionProcessor {
  /** Side of a vision patch in pixels. @default 14 */
  patchSize: number;
  /** Patches merged per side into one language-model token. @default 2 */
  mergeSize: number;
  /** Fewest pixels after the resize. @default 3136 (56 x 56) */
  minPixels: number;
  /** Most pixels after the resize. @default 12845056 (the published Qwen2.5-VL preprocessor_config.json) */
  maxPixels: number;
  /** Per-channel mean and std the rescaled pixels are normalized with. @default OpenAI CLIP's (Qwen2.5-VL's) */
  imageMean?: readonly [number, number, number];
  imageStd?: readonly [number, number, number];
}

/**
 * Qwen2.5-VL's published processor settings (its preprocessor_config.json). transformers' image processor class alone
 * defaults to max_pixels 1003520 (28 * 28 * 1280); a model's own config overrides that.
 */
export const QWEN25_VL_PROCESSOR: VisionProcessor = {
  patchSize: 14,
  mergeSize: 2,
  minPixels: 56 * 56,
  maxPixels: 12845056,
};

/**
 * The processor settings of a preprocessor_config.json's contents (`source` names it in errors): the published
 * `min_pixels` / `max_pixels`, or transformers 5.x's `size.shortest_edge` / `longest_edge`; what it leaves out is
 * Qwen2.5-VL's published value.
 */
export function visionProcessorFromJson(j: Record<string, unknown>, source: string): VisionProcessor {
  const size = (j.size ?? {}) as Record<string, unknown>;
  const num = (v: unknown, fallback: number, key: string): number => {
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      throw new ConfigError(`${source}: ${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const channels = (v: unknown, key: string, positive: boolean): [number, number, number] | undefined => {
    if (v === undefined || v === null) return undefined;
    if (
      !Array.isArray(v) ||
      v.length !== 3 ||
      !v.every((x) => typeof x === 'number' && Number.isFinite(x) && (!positive || x > 0))
    )
      throw new ConfigError(
        `${source}: ${key} must be three ${positive ? 'positive' : 'finite'} numbers (R, G, B), got ${JSON.stringify(v)}`,
      );
    return v as [number, number, number];
  };
  const p = QWEN25_VL_PROCESSOR;
  // CLIP's (the default) are left out, so that Qwen2.5-VL's settings read back equal to what was written
  const unlessClip = (v: [number, number, number] | undefined, clip: readonly number[]) =>
    v && v.every((x, c) => x === clip[c]) ? undefined : v;
  const imageMean = unlessClip(channels(j.image_mean, 'image_mean', false), CLIP_MEAN);
  const imageStd = unlessClip(channels(j.image_std, 'image_std', true), CLIP_STD);
  return {
    patchSize: num(j.patch_size, p.patchSize, 'patch_size'),
    mergeSize: num(j.merge_size, p.mergeSize, 'merge_size'),
    minPixels: num(j.min_pixels ?? size.shortest_edge, p.minPixels, 'min_pixels'),
    maxPixels: num(j.max_pixels ?? size.longest_edge, p.maxPixels, 'max_pixels'),
    ...(imageMean ? { imageMean } : {}),
    ...(imageStd ? { imageStd } : {}),
  };
}

/** An image's size after the processor's resize, its patch grid, and the `<|image_pad|>` tokens it takes. */
export interface ImageGrid {
  resizedHeight: number;
  resizedWidth: number;
  /** Patches down and across (transformers' `image_grid_thw[1:]`; the temporal size of an image is 1). */
  gridH: number;
  gridW: number;
  /** `gridH * gridW / mergeSize**2`. */
  tokens: number;
}

/**
 * transformers' `smart_resize`: each side rounded to a multiple of `patchSize * mergeSize` (Python's round, half to
 * even), then scaled as a whole into [minPixels, maxPixels] keeping the aspect ratio as closely as the multiples allow.
 */
export function imageGrid(height: number, width: number, p: VisionProcessor = QWEN25_VL_PROCESSOR): ImageGrid {
  if (!(Number.isInteger(height) && Number.isInteger(width) && height > 0 && width > 0))
    throw new ConfigError(`An image must have positive integer sides, got ${width}x${height}.`);
  if (Math.max(height, width) / Math.min(height, width) > 200)
    throw new ConfigError(
      `The image is ${width}x${height}; Qwen2.5-VL's processor refuses aspect ratios over 200. Crop or pad it.`,
    );
  const factor = p.patchSize * p.mergeSize;
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > p.maxPixels) {
    const beta = Math.sqrt((height * width) / p.maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < p.minPixels) {
    const beta = Math.sqrt(p.minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  const gridH = h / p.patchSize;
  const gridW = w / p.patchSize;
  return { resizedHeight: h, resizedWidth: w, gridH, gridW, tokens: (gridH * gridW) / (p.mergeSize * p.mergeSize) };
}

/** Python 3's `round`: halves go to the even neighbour (2.5 -> 2, 3.5 -> 4). */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * `text` (a rendered prompt) with the `<|image_pad|>` of each image placeholder widened to its image's tokens, in
 * order. Throws when the placeholders and the images differ in number (a text part that spells the placeholder out).
 */
export function expandImagePads(text: string, images: readonly RgbImage[], p: VisionProcessor): string {
  const pieces = text.split(IMAGE_PLACEHOLDER);
  if (pieces.length - 1 !== images.length)
    throw new ConfigError(
      `The prompt has ${pieces.length - 1} image placeholders (${IMAGE_PLACEHOLDER}) for ${images.length} images; text may not spell the placeholder out.`,
    );
  let out = pieces[0]!;
  images.forEach((image, i) => {
    const { tokens } = imageGrid(image.height, image.width, p);
    out += VISION_START + IMAGE_PAD.repeat(tokens) + VISION_END + pieces[i + 1]!;
  });
  return out;
}
