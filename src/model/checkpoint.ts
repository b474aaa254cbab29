// Hugging Face checkpoint directories: config.json + generation_config.json + model.safetensors (+ shards),
// LoRA adapters in PEFT's layout under `adapter/`, the value head as value_head.safetensors, tokenizer.json copied.
// A LoRA model over a frozen base loaded from files is saved as PEFT saves one: the adapter naming its base, no base.
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Bf16Matrix } from '../tensor/index.js';
import { CheckpointError } from '../util/index.js';
import { configFromHF, configToHF, generationConfigToHF, type ModelConfig } from './config.js';
import { ValueHead } from './forward.js';
import { LoraAdapters, type AdapterNaming } from './lora.js';
import { vlConfigFromHF } from './qwen2-vl-config.js';
import { loadWeights, readSafetensors, saveWeights, writeSafetensors, type WeightMap } from './safetensors.js';
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
  /** config.json to write instead of the model's own (a vision-language model's, whose language model `model` is). */
  config?: Record<string, unknown>;
  /** Tensors written beside the model's (a vision-language model's tower, `visual.*`). */
  extraWeights?: WeightMap;
  /** The module names of the LoRA adapter's keys: a vision-language model's are its own (lora.ts). @default 'causal-lm' */
  adapterNaming?: AdapterNaming;
}

/**
 * Write `model` as a Hugging Face checkpoint directory that transformers (and PEFT, for adapters) load. A LoRA model
 * whose frozen base came from a directory (`model.baseDir`) is written as PEFT's `save_pretrained` writes one: the
 * adapter under `adapter/` with `base_model_name_or_path` = that directory (absolute), config and tokenizer, and no
 * base weights: rewriting an unchanged base cost its float32 size in memory and on disk at every checkpoint.
 */
export async function saveModel(dir: string, model: Transformer, opts: SaveOptions = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), JSON.stringify(opts.config ?? configToHF(model.config), null, 2) + '\n');
  await writeFile(
    join(dir, 'generation_config.json'),
    JSON.stringify(generationConfigToHF(model.config), null, 2) + '\n',
  );
  // a vision-language model's tower (`extraWeights`, trainable by config) is written whole with its language model
  const base = opts.extraWeights ? null : frozenBaseDir(model);
  if (base === null)
    await saveWeights(
      dir,
      new Map([...model.exportWeights(), ...(opts.extraWeights ?? [])]),
      opts.maxShardBytes === undefined ? {} : { maxShardBytes: opts.maxShardBytes },
    );
  else if (realpathSync(dir) !== realpathSync(base)) {
    // weights left in `dir` by an earlier save would be read instead of the named base (`weightsDir`); `dir` may be
    // the base itself under another name (a symlink), whose weights must stay
    await rm(join(dir, 'model.safetensors'), { force: true });
    await rm(join(dir, 'model.safetensors.index.json'), { force: true });
  }
  if (model.lora) await model.lora.save(join(dir, ADAPTER_DIR), base ?? '..', opts.adapterNaming);
  if (opts.valueHead) await writeSafetensors(join(dir, VALUE_HEAD_FILE), opts.valueHead.exportWeights());
  if (opts.tokenizerPath) {
    if (!existsSync(opts.tokenizerPath)) throw new CheckpointError(`tokenizer file not found: ${opts.tokenizerPath}`);
    await copyFile(opts.tokenizerPath, join(dir, 'tokenizer.json'));
    const cfg = join(opts.tokenizerPath, '..', 'tokenizer_config.json');
    if (existsSync(cfg)) await copyFile(cfg, join(dir, 'tokenizer_config.json'));
  }
}

/** `model.baseDir` when the model carries LoRA adapters over a base that is frozen and so unchanged; else null. */
function frozenBaseDir(model: Transformer): string | null {
  if (!model.lora || model.baseDir === null) return null;
  return [...model.weights.values()].some((t) => t.requiresGrad) ? null : model.baseDir;
}

const hasWeights = (dir: string) =>
  existsSync(join(dir, 'model.safetensors')) || existsSync(join(dir, 'model.safetensors.index.json'));

/**
 * The directory holding `dir`'s base weights (absolute): `dir` itself when it has model.safetensors (or a sharded
 * index), else the base its adapter names (`adapter/adapter_config.json`'s `base_model_name_or_path`, relative to
 * `adapter/` or absolute), followed until a directory with weights.
 */
export function weightsDir(dir: string): string {
  const seen = new Set<string>();
  let at = resolve(dir);
  while (!hasWeights(at)) {
    const cfgPath = join(at, ADAPTER_DIR, 'adapter_config.json');
    if (!existsSync(cfgPath)) return at; // loadWeights says which files are missing
    seen.add(at);
    let named: unknown;
    try {
      named = (JSON.parse(readFileSync(cfgPath, 'utf8')) as { base_model_name_or_path?: unknown })
        .base_model_name_or_path;
    } catch (err) {
      throw new CheckpointError(`${cfgPath} is not valid JSON (${(err as Error).message}); the checkpoint is damaged.`);
    }
    const next = typeof named === 'string' && named !== '' ? resolve(at, ADAPTER_DIR, named) : null;
    if (next === null || seen.has(next))
      throw new CheckpointError(
        `${at} has no weights (model.safetensors or model.safetensors.index.json) and its adapter names no other base (${cfgPath}: base_model_name_or_path ${JSON.stringify(named)}); set base_model_name_or_path to the directory of the base model the adapter was trained on.`,
      );
    if (!existsSync(join(next, 'config.json')))
      throw new CheckpointError(
        `${at} holds LoRA adapters over the base model ${JSON.stringify(named)} (${cfgPath}: base_model_name_or_path), and ${next} is not a model directory (no config.json): put the base model back there, or set base_model_name_or_path to where it is now.`,
      );
    at = next;
  }
  return at;
}

/**
 * The base weight files an adapter-only checkpoint `dir` reads (`weightsDir`): the base directory and the files' names
 * in it (model.safetensors, or the index and its shards); null when `dir` holds its own weights.
 */
export function baseWeightFiles(dir: string): { base: string; names: string[] } | null {
  const base = weightsDir(dir);
  if (base === resolve(dir)) return null;
  if (existsSync(join(base, 'model.safetensors'))) return { base, names: ['model.safetensors'] };
  const index = join(base, 'model.safetensors.index.json');
  let map: unknown;
  try {
    map = (JSON.parse(readFileSync(index, 'utf8')) as { weight_map?: unknown }).weight_map;
  } catch (err) {
    throw new CheckpointError(`${index} is not valid JSON (${(err as Error).message}); the base model is damaged.`);
  }
  if (map === null || typeof map !== 'object')
    throw new CheckpointError(`${index} has no \`weight_map\` object; the base model is damaged.`);
  return { base, names: ['model.safetensors.index.json', ...new Set(Object.values(map).map(String))] };
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

/**
 * Load a checkpoint directory (ours or one saved by transformers), with its LoRA adapter and value head if present; an
 * adapter-only directory reads its base from the directory the adapter names (`weightsDir`).
 */
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
    const base = weightsDir(dir);
    const loaded = await loadWeights(base, undefined, take);
    const source = base === resolve(dir) ? dir : `${dir} (base ${base})`;
    model = Transformer.fromWeights(config, loaded, source, { frozenBf16: opts.frozenBf16 ?? false, bf16 });
    model.baseDir = base;
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
