// Hugging Face checkpoint directories: config.json + generation_config.json + model.safetensors (+ shards),
// LoRA adapters in PEFT's layout under `adapter/`, the value head as value_head.safetensors, tokenizer.json copied.
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Bf16Matrix } from '../tensor/index.js';
import { CheckpointError } from '../util/index.js';
import { configFromHF, configToHF, generationConfigToHF, type ModelConfig } from './config.js';
import { ValueHead } from './forward.js';
import { LoraAdapters } from './lora.js';
import { vlConfigFromHF } from './qwen2-vl-config.js';
import { loadWeights, readSafetensors, saveWeights, writeSafetensors } from './safetensors.js';
import { Transformer } from './transformer.js';

/** Sub-directory of a checkpoint holding the PEFT adapter (base_model_name_or_path points to `..`). */
export const ADAPTER_DIR = 'adapter';
/** File of the value head (keys `value_head.weight` (1, C), `value_head.bias` (1)). */
export const VALUE_HEAD_FILE = 'value_head.safetensors';

export interface SaveOptions {
  /** A value head to save beside the model. */
  valueHead?: ValueHead | null;
  /** Path of a tokenizer.json (and its tokenizer_config.json, if beside it) to copy in. */
  tokenizerPath?: string;
  /**
   * Split model.safetensors into Hugging Face index + shards above this many bytes. @default DEFAULT_MAX_SHARD_BYTES (1
   * GiB)
   */
  maxShardBytes?: number;
}

/** Write `model` as a Hugging Face checkpoint directory that transformers (and PEFT, for adapters) load. */
export async function saveModel(dir: string, model: Transformer, opts: SaveOptions = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), JSON.stringify(configToHF(model.config), null, 2) + '\n');
  await writeFile(
    join(dir, 'generation_config.json'),
    JSON.stringify(generationConfigToHF(model.config), null, 2) + '\n',
  );
  await saveWeights(
    dir,
    model.exportWeights(),
    opts.maxShardBytes === undefined ? {} : { maxShardBytes: opts.maxShardBytes },
  );
  if (model.lora) await model.lora.save(join(dir, ADAPTER_DIR), '..');
  if (opts.valueHead) await writeSafetensors(join(dir, VALUE_HEAD_FILE), opts.valueHead.exportWeights());
  if (opts.tokenizerPath) {
    if (!existsSync(opts.tokenizerPath)) throw new CheckpointError(`tokenizer file not found: ${opts.tokenizerPath}`);
    await copyFile(opts.tokenizerPath, join(dir, 'tokenizer.json'));
    const cfg = join(opts.tokenizerPath, '..', 'tokenizer_config.json');
    if (existsSync(cfg)) await copyFile(cfg, join(dir, 'tokenizer_config.json'));
  }
}

/** Read a checkpoint's config.json. */
export async function loadModelConfig(dir: string): Promise<ModelConfig> {
  const { json, path } = await readConfigJson(dir);
  return configFromHF(json, path);
}

/**
 * The language model's config of a checkpoint: a text model's config.json, or a Qwen2.5-VL's text part (its
 * positions and vocabulary are the language model's); for what reads positions and widths of either kind.
 */
export async function loadTextConfig(dir: string): Promise<ModelConfig> {
  const { json, path } = await readConfigJson(dir);
  return json.model_type === 'qwen2_5_vl' ? vlConfigFromHF(json, path).text : configFromHF(json, path);
}

async function readConfigJson(dir: string): Promise<{ json: Record<string, unknown>; path: string }> {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) throw new CheckpointError(`not a model checkpoint: ${path} is missing`);
  try {
    return { json: JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>, path };
  } catch (err) {
    throw new CheckpointError(`${path} is not valid JSON (${(err as Error).message})`);
  }
}

/** Load a checkpoint directory (ours or one saved by transformers), with its LoRA adapter and value head if present. */
export async function loadModel(
  dir: string,
  /** adapters: load a saved LoRA adapter (default true); frozenBf16: projections straight to bf16 native memory. */
  opts: { adapters?: boolean; frozenBf16?: boolean } = {},
): Promise<{ model: Transformer; valueHead: ValueHead | null }> {
  const config = await loadModelConfig(dir);
  // bf16 projections go to native memory tensor by tensor as the files are read
  const bf16 = new Map<string, Bf16Matrix>();
  const take = opts.frozenBf16 ? Transformer.bf16Taker(config, bf16) : undefined;
  let model: Transformer;
  try {
    const loaded = await loadWeights(dir, undefined, take);
    model = Transformer.fromWeights(config, loaded, dir, { frozenBf16: opts.frozenBf16 ?? false, bf16 });
  } catch (err) {
    for (const m of bf16.values()) m.dispose();
    throw err;
  }
  if (opts.adapters !== false && existsSync(join(dir, ADAPTER_DIR, 'adapter_config.json')))
    await LoraAdapters.load(model, join(dir, ADAPTER_DIR));
  const vh = join(dir, VALUE_HEAD_FILE);
  const valueHead = existsSync(vh) ? ValueHead.fromWeights(await readSafetensors(vh), config.hiddenSize, vh) : null;
  return { model, valueHead };
}
