// The local engine's vision-language policy (Qwen2.5-VL): loading it and its processor settings from a checkpoint
// directory, and sampling prompts that carry images. Its language model is the engine's `policy`; text-only calls
// take the text paths unchanged (with no image the 3-D positions are the 1-D ones on every axis).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ADAPTER_DIR, generateVL, LoraAdapters, Qwen25VL, type GenerateOptions } from '../model/index.js';
import { pixelValues, QWEN25_VL_PROCESSOR, type VisionProcessor } from '../tokenizer/index.js';
import { ConfigError, Rng } from '../util/index.js';
import type { Generation, SequenceBatch } from './types.js';

/** A vision-language policy and the image processor settings its prompts were counted with. */
export interface LocalVision {
  model: Qwen25VL;
  processor: VisionProcessor;
}

/** Whether `dir/config.json` describes a Qwen2.5-VL checkpoint. */
export async function isVisionCheckpoint(dir: string): Promise<boolean> {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) return false;
  return (JSON.parse(await readFile(path, 'utf8')) as { model_type?: unknown }).model_type === 'qwen2_5_vl';
}

/**
 * The processor settings of `dir/preprocessor_config.json` (the published `min_pixels` / `max_pixels`, or 5.x's
 * `size.shortest_edge` / `longest_edge`), Qwen2.5-VL's published ones when the file is absent.
 */
export async function loadVisionProcessor(dir: string): Promise<VisionProcessor> {
  const path = join(dir, 'preprocessor_config.json');
  if (!existsSync(path)) return QWEN25_VL_PROCESSOR;
  const j = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const size = (j.size ?? {}) as Record<string, unknown>;
  const num = (v: unknown, fallback: number, key: string): number => {
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      throw new ConfigError(`${path}: ${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const p = QWEN25_VL_PROCESSOR;
  return {
    patchSize: num(j.patch_size, p.patchSize, 'patch_size'),
    mergeSize: num(j.merge_size, p.mergeSize, 'merge_size'),
    minPixels: num(j.min_pixels ?? size.shortest_edge, p.minPixels, 'min_pixels'),
    maxPixels: num(j.max_pixels ?? size.longest_edge, p.maxPixels, 'max_pixels'),
  };
}

/** Load a Qwen2.5-VL checkpoint directory: the model (with its PEFT adapter when `dir/adapter` has one). */
export async function loadVision(dir: string): Promise<LocalVision> {
  const model = await Qwen25VL.load(dir);
  if (existsSync(join(dir, ADAPTER_DIR, 'adapter_config.json')))
    await LoraAdapters.load(model.lm, join(dir, ADAPTER_DIR));
  return { model, processor: await loadVisionProcessor(dir) };
}

/**
 * Sample every prompt with its images (batch 1 each, `generateVL`); each prompt draws from its own seed, taken in
 * order from `params.seed`.
 */
export function generateWithImages(
  vision: LocalVision,
  prompts: readonly (readonly number[])[],
  params: GenerateOptions,
): Generation[] {
  const master = new Rng(params.seed);
  return prompts.map((prompt, i) => {
    const images = params.images?.[i];
    const pv = images && images.length > 0 ? pixelValues(images, vision.processor) : undefined;
    const input = pv ? { pixels: pv.data, grids: pv.grids } : undefined;
    return generateVL(vision.model, Int32Array.from(prompt), input, { ...params, seed: master.nextUint32() }, i);
  });
}

/**
 * Throws for a batch row holding `<|image_pad|>` tokens: the engine's teacher-forced passes read token embeddings
 * only, so such a row would be scored without its image.
 */
export function refuseImageRows(batch: SequenceBatch, imageTokenId: number): void {
  for (let b = 0; b < batch.B; b++)
    for (let t = 0; t < batch.lengths[b]!; t++)
      if (batch.ids[b * batch.T + t] === imageTokenId)
        throw new ConfigError(
          `Row ${b} of the batch holds <|image_pad|> tokens (at ${t}); the local engine scores and trains rows with images only through generate so far (docs/vision.md, "Not done yet"). Train on the env's text observation (observation: 'text+image' without a vision processor).`,
        );
}
