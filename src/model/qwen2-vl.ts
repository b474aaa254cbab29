// Qwen2.5-VL in the local engine: the vision tower's embeddings placed at the prompt's `<|image_pad|>` tokens, then the
// Qwen2 language model (our Transformer) with multimodal 3-D rotary positions. Loads transformers' checkpoints in the
// published layout (`model.*`, `visual.*`, `lm_head.*`) and the 5.x module layout (`model.language_model.*`,
// `model.visual.*`). Follows transformers' Qwen2_5_VLForConditionalGeneration (5.17).
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { concat, embedding, type Tensor } from '../tensor/index.js';
import { ConfigError, type Rng } from '../util/index.js';
import { weightsDir } from './checkpoint.js';
import { vlConfigFromHF, type VLConfig } from './qwen2-vl-config.js';
import { visionTokens } from './vision-tokens.js';
import { mropePositions, mropeRotary, type GridTHW } from './qwen2-vl-rotary.js';
import { loadWeights, rejectUnexpected, type WeightMap } from './safetensors.js';
import { Transformer, weightShapes } from './transformer.js';
import { visionWeightShapes, VisionTower } from './vision-tower.js';

/** Images of one prompt as the vision tower reads them (see `pixelValues` in src/tokenizer). */
export interface VisionInput {
  /** float32 (numPatches, 3 * 2 * patch**2) row-major. */
  pixels: Float32Array;
  /** [t, h, w] patches per image, in prompt order. */
  grids: readonly GridTHW[];
}

/** Options of one forward pass of the vision-language model. */
export interface VLForwardOptions {
  /** Randomness for LoRA dropout on the language model; none = eval mode. */
  dropoutRng?: Rng;
  /** Activation checkpointing in the language model's layers (ForwardOptions.checkpoint). @default false */
  checkpoint?: boolean;
}

/**
 * A checkpoint name in the published layout: transformers 5.x's module names (`model.language_model.X`,
 * `model.visual.X`) become `model.X` and `visual.X`; others are kept.
 */
export function publishedName(name: string): string {
  if (name.startsWith('model.language_model.')) return `model.${name.slice('model.language_model.'.length)}`;
  if (name.startsWith('model.visual.')) return name.slice('model.'.length);
  return name;
}

/** Qwen2.5-VL: a vision tower and a Qwen2 language model that reads its embeddings. */
export class Qwen25VL {
  constructor(
    readonly config: VLConfig,
    /** The language model (its weights under `model.*`, `lm_head.*`); LoRA attaches here. */
    readonly lm: Transformer,
    readonly visual: VisionTower,
  ) {
    // Only the processor writes vision tokens: the language model never samples them (suppress.ts).
    lm.suppressedTokens = Int32Array.from(visionTokens(config).keys());
  }

  /** Seeded random weights (the language model trainable, the vision tower frozen). */
  static init(config: VLConfig, seed = 0): Qwen25VL {
    return new Qwen25VL(config, Transformer.init(config.text, seed), VisionTower.init(config.vision, seed + 1));
  }

  /** Build from loaded weights (either layout); throws CheckpointError naming a missing, mis-shaped or unknown one. */
  static fromWeights(config: VLConfig, loaded: WeightMap, source = 'checkpoint'): Qwen25VL {
    const renamed: WeightMap = new Map();
    for (const [name, w] of loaded) renamed.set(publishedName(name), w);
    const text: WeightMap = new Map();
    const vision: WeightMap = new Map();
    for (const [name, w] of renamed) (name.startsWith('visual.') ? vision : text).set(name, w);
    rejectUnexpected(vision, new Set(visionWeightShapes(config.vision).keys()), source);
    return new Qwen25VL(
      config,
      Transformer.fromWeights(config.text, text, source),
      VisionTower.fromWeights(config.vision, vision, source),
    );
  }

  /**
   * Load a checkpoint directory (config.json + safetensors) that transformers saved; an adapter-only one (a LoRA run's
   * with the tower frozen) reads its weights from the base its adapter names (`weightsDir`).
   */
  static async load(dir: string): Promise<Qwen25VL> {
    const path = join(dir, 'config.json');
    const json = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    const base = weightsDir(dir);
    const source = base === resolve(dir) ? dir : `${dir} (base ${base})`;
    return Qwen25VL.fromWeights(vlConfigFromHF(json, path), await loadWeights(base), source);
  }

  /** Every weight name of the model in the published layout and its shape. */
  static weightShapes(config: VLConfig): Map<string, number[]> {
    return new Map([...weightShapes(config.text), ...visionWeightShapes(config.vision)]);
  }

  /**
   * The input embeddings (T, C) of one prompt: the token embeddings, with the image embeddings at the
   * `<|image_pad|>` tokens in order (`seen`: the tower's output for `images` when the caller ran it, e.g. over several
   * prompts' images at once). Throws when their counts differ.
   */
  inputEmbeds(ids: Int32Array, images?: VisionInput, seen?: Tensor): Tensor {
    const tokens = embedding(this.lm.weights.get('model.embed_tokens.weight')!, ids); // (T, C)
    const pads = ids.reduce((n, id) => n + (id === this.config.imageTokenId ? 1 : 0), 0);
    if (!images || images.grids.length === 0) {
      if (pads > 0)
        throw new ConfigError(`The prompt has ${pads} <|image_pad|> tokens but no images were given with it.`);
      return tokens;
    }
    const merge = this.config.vision.spatialMergeSize ** 2;
    const expected = images.grids.reduce((n, [t, h, w]) => n + (t * h * w) / merge, 0);
    if (pads !== expected)
      throw new ConfigError(
        `The prompt has ${pads} <|image_pad|> tokens; its ${images.grids.length} image(s) (grids ${JSON.stringify(images.grids)}) take ${expected}. Widen each image's placeholder with expandImagePads.`,
      );
    const embeds = seen ?? this.visual.forward(images.pixels, images.grids); // (pads, C)
    const T = ids.length;
    const rows = new Int32Array(T);
    let k = 0;
    for (let i = 0; i < T; i++) rows[i] = ids[i] === this.config.imageTokenId ? T + k++ : i;
    return embedding(concat([tokens, embeds], 0), rows);
  }

  /** The 3-D positions of a prompt and the delta that continues them after it (see `mropePositions`). */
  positions(ids: Int32Array, images?: VisionInput): { positions: Int32Array; delta: number } {
    return mropePositions(ids, images?.grids ?? [], this.config.imageTokenId, this.config.vision.spatialMergeSize);
  }

  /** Final hidden states (T, C) of one prompt with its images (batch 1). */
  hidden(ids: Int32Array, images?: VisionInput, opts: VLForwardOptions = {}): Tensor {
    const c = this.config;
    const T = ids.length;
    const { positions } = this.positions(ids, images);
    const rotary = mropeRotary(positions, T, c.text.headDim, c.text.ropeTheta, c.mropeSection);
    return this.lm.hidden(ids, 1, T, {
      inputEmbeds: this.inputEmbeds(ids, images),
      rotary,
      ...(opts.dropoutRng ? { dropoutRng: opts.dropoutRng } : {}),
      ...(opts.checkpoint ? { checkpoint: true } : {}),
    });
  }

  /** Logits (N, V) of hidden states (N, C). */
  logits(hidden: Tensor): Tensor {
    return this.lm.logits(hidden);
  }

  /** Trainable parameters: the language model's (its LoRA adapters when attached); the tower is frozen. */
  parameters(): [string, Tensor][] {
    return this.lm.parameters();
  }

  dispose(): void {
    this.lm.dispose();
    this.visual.dispose();
  }
}

/** Whether a config.json describes a model this class loads. */
export function isVLConfig(json: Record<string, unknown>): boolean {
  return json.model_type === 'qwen2_5_vl';
}
