// The local engine's vision-language policy (Qwen2.5-VL): loading it and its processor settings from a checkpoint
// directory, and sampling prompts that carry images. Its language model is the engine's `policy`; text-only calls
// take the text paths unchanged (with no image the 3-D positions are the 1-D ones on every axis).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ADAPTER_DIR,
  generateVL,
  generateVLYielding,
  LoraAdapters,
  Qwen25VL,
  refuseStrayVisionToken,
  saveModel,
  vlConfigToHF,
  type GenerateOptions,
  type SaveOptions,
  type VisionInput,
  type WeightMap,
} from '../model/index.js';
import {
  pixelValues,
  QWEN25_VL_PROCESSOR,
  qwen25PreprocessorConfig,
  visionProcessorFromJson,
  type VisionProcessor,
} from '../tokenizer/index.js';
import { ConfigError, writeFileAt } from '../util/index.js';
import type { Generation, SequenceBatch } from './types.js';

/** A vision-language policy and the image processor settings its prompts were counted with. */
export interface LocalVision {
  model: Qwen25VL;
  processor: VisionProcessor;
  /** A frozen reference copy (full fine-tuning with a reference), whose language model is the engine's reference. */
  reference?: Qwen25VL;
  /** A separate critic's model (its own tower), whose language model is the engine's critic model. */
  critic?: Qwen25VL;
}

/** `dir/config.json`'s model_type (undefined without one). */
export async function checkpointModelType(dir: string): Promise<unknown> {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) return undefined;
  return (JSON.parse(await readFile(path, 'utf8')) as { model_type?: unknown }).model_type;
}

/** Whether `dir/config.json` describes a Qwen2.5-VL checkpoint (the vision-language model this engine runs). */
export async function isVisionCheckpoint(dir: string): Promise<boolean> {
  return (await checkpointModelType(dir)) === 'qwen2_5_vl';
}

/**
 * The processor settings of `dir/preprocessor_config.json` (the published `min_pixels` / `max_pixels`, or 5.x's
 * `size.shortest_edge` / `longest_edge`), Qwen2.5-VL's published ones when the file is absent.
 */
export async function loadVisionProcessor(dir: string): Promise<VisionProcessor> {
  const path = join(dir, 'preprocessor_config.json');
  if (!existsSync(path)) return QWEN25_VL_PROCESSOR;
  return visionProcessorFromJson(JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>, path);
}

/**
 * Load a Qwen2.5-VL checkpoint directory: the model (with its PEFT adapter when `dir/adapter` has one, its keys named
 * as PEFT names them, `model.language_model.layers.*`, or as our saves did before, `model.layers.*`).
 */
export async function loadVision(dir: string): Promise<LocalVision> {
  const model = await Qwen25VL.load(dir);
  if (existsSync(join(dir, ADAPTER_DIR, 'adapter_config.json')))
    await LoraAdapters.load(model.lm, join(dir, ADAPTER_DIR), 'vision-language');
  return { model, processor: await loadVisionProcessor(dir) };
}

/**
 * Write a vision-language policy as a Qwen2.5-VL checkpoint directory: config.json in the Hub's layout (vision_config,
 * mrope_section), the language model's and the tower's (`visual.*`) weights, its LoRA adapter under the names PEFT
 * gives a Qwen2.5-VL's (`model.language_model.layers.*`, target_modules a regex over the language model: PEFT loads
 * it), the value head as for a text model, and preprocessor_config.json with the processor settings. `loadVision` reads
 * it back.
 */
export async function saveVision(
  dir: string,
  vision: LocalVision,
  opts: Omit<SaveOptions, 'config' | 'extraWeights'> = {},
): Promise<void> {
  const tower: WeightMap = new Map();
  for (const [name, t] of vision.model.visual.weights)
    tower.set(name, { shape: [...t.shape], data: t.toFloat32Array() });
  await saveModel(dir, vision.model.lm, {
    ...opts,
    config: vlConfigToHF(vision.model.config),
    extraWeights: tower,
    adapterNaming: 'vision-language',
  });
  writeFileAt(
    join(dir, 'preprocessor_config.json'),
    JSON.stringify(qwen25PreprocessorConfig(vision.processor), null, 2) + '\n',
    'write the processor settings',
  );
}

/**
 * Sample every prompt with its images (`generateVL`: each prompt prefilled alone, the batch decoded together; each
 * prompt draws from its own stream of `params.seed`, as in `generate`); per decode step when `onTokens` reads them.
 */
export function generateWithImages(
  vision: LocalVision,
  prompts: readonly (readonly number[])[],
  params: GenerateOptions,
): Generation[] | Promise<Generation[]> {
  prompts.forEach((prompt, i) => refuseStrayVisionToken(prompt, vision.model.config, `Prompt ${i}`));
  const inputs = prompts.map((_, i): VisionInput | undefined => {
    const images = params.images?.[i];
    if (!images || images.length === 0) return undefined;
    const pv = pixelValues(images, vision.processor);
    return { pixels: pv.data, grids: pv.grids };
  });
  const { images: _, ...opts } = params;
  return opts.onTokens
    ? generateVLYielding(vision.model, prompts, inputs, opts)
    : generateVL(vision.model, prompts, inputs, opts);
}

/**
 * The vision inputs of `batch`'s rows that carry images (row -> its images' pixel values), empty when none does. Throws
 * for images given to a text-only model, for a row with a vision token outside an image's run (`strayVisionToken`: not
 * sampled by the engine) and for a row whose `<|image_pad|>` tokens do not match its images.
 */
export function imageRows(batch: SequenceBatch, vision: LocalVision | undefined): Map<number, VisionInput> {
  const out = new Map<number, VisionInput>();
  const given = batch.images;
  if (given && given.length !== batch.B)
    throw new RangeError(`SequenceBatch: images has ${given.length} entries for B = ${batch.B} rows; give one per row`);
  if (!vision) {
    const b = given?.findIndex((im) => im !== undefined && im.length > 0) ?? -1;
    if (b >= 0)
      throw new ConfigError(
        `Row ${b} of the batch carries ${given![b]!.length} image(s) but the local engine's model is text-only; load a vision-language checkpoint (model_type qwen2_5_vl), or train on the env's text observation.`,
      );
    return out;
  }
  const { imageTokenId, vision: tower } = vision.model.config;
  const merge = tower.spatialMergeSize ** 2;
  for (let b = 0; b < batch.B; b++) {
    const row = batch.ids.subarray(b * batch.T, b * batch.T + batch.lengths[b]!);
    refuseStrayVisionToken(row, vision.model.config, `Row ${b} of the batch`);
    let pads = 0;
    for (let t = 0; t < batch.lengths[b]!; t++) if (batch.ids[b * batch.T + t] === imageTokenId) pads++;
    const images = given?.[b] ?? [];
    if (images.length === 0) {
      if (pads > 0)
        throw new ConfigError(
          `Row ${b} of the batch holds ${pads} <|image_pad|> tokens but no images; give the batch each row's images (SequenceBatch.images, in prompt order).`,
        );
      continue;
    }
    const pv = pixelValues(images, vision.processor);
    const expected = pv.grids.reduce((n, [t, h, w]) => n + (t * h * w) / merge, 0);
    if (pads !== expected)
      throw new ConfigError(
        `Row ${b} of the batch holds ${pads} <|image_pad|> tokens; its ${images.length} image(s) take ${expected} under the processor's settings (grids ${JSON.stringify(pv.grids)}). The row's ids and images must come from the same rendering (EpisodeContext with the engine's vision processor).`,
      );
    out.set(b, { pixels: pv.data, grids: pv.grids });
  }
  return out;
}
