// Opening what `ragen serve` serves: a model directory or a run directory (its latest checkpoint) on the
// local engine (with top_logprobs scoring) or the torch engine, with the checkpoint's own tokenizer.
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { LocalEngine, TorchEngine } from '../engine/index.js';
import { loadTextConfig } from '../model/index.js';
import {
  loadTokenizer,
  runTokenizer,
  tinyTokenizerDir,
  type ChatTemplateChoice,
  type Tokenizer,
} from '../tokenizer/index.js';
import { UsageError } from '../util/index.js';
import type { ServeOptions } from './server.js';
import { localTopLogprobs } from './top-logprobs.js';

/** A model directory: `dir` itself if it holds config.json, else the highest `checkpoints/step-N` of a run. */
export type ModelDirResolver = (dir: string) => string;

/** What `OpenAIServer` needs for a checkpoint, plus where it came from and how to free its engine. */
export type ServeTarget = Pick<
  ServeOptions,
  'engine' | 'tokenizer' | 'modelName' | 'contextLength' | 'vocabSize' | 'topLogprobs'
> & {
  modelDir: string;
  /** Free the engine (the torch engine's worker process). */
  dispose(): void;
};

/** Settings of the torch engine when serving (`ragen serve --engine torch`). */
export interface TorchServeOptions {
  /** `auto`, `cpu`, `cuda`, `cuda:1`. @default 'auto' */
  device?: string;
  /** `auto`, `float32`, `bfloat16`. @default 'auto' */
  precision?: string;
  /** Interpreter with torch (default: found as the torch engine finds it). */
  python?: string;
}

/** Which tokenizer and chat template to serve with. */
export interface ServeTokenizerOptions {
  /** A tokenizer directory instead of the checkpoint's own (its own chat template). */
  tokenizerDir?: string;
  /**
   * The chat template over the checkpoint's own tokenizer, as `model.chatTemplate` picks it in training. @default
   * 'model'
   */
  chatTemplate?: ChatTemplateChoice;
}

/**
 * The checkpoint's own tokenizer (tokenizer.json + tokenizer_config.json) with the `chatTemplate` choice, so a
 * run trained on ragen's Qwen template is served with it; else `tokenizerDir` with its own template.
 */
function openTokenizer(modelDir: string, opts: ServeTokenizerOptions): { tokenizer: Tokenizer; tokDir: string } {
  const choice = opts.chatTemplate ?? 'model';
  if (opts.tokenizerDir !== undefined) {
    if (choice !== 'model')
      throw new UsageError(
        `--chat-template ${choice} applies to the checkpoint's own tokenizer; drop --tokenizer or --chat-template.`,
      );
    return { tokenizer: loadTokenizer(opts.tokenizerDir), tokDir: opts.tokenizerDir };
  }
  if (!existsSync(join(modelDir, 'tokenizer.json')))
    throw new UsageError(`\`${modelDir}\` has no tokenizer.json; pass --tokenizer <dir> (e.g. ${tinyTokenizerDir()}).`);
  return { tokenizer: runTokenizer(modelDir, choice, '--chat-template'), tokDir: modelDir };
}

function checkVocab(tokenizer: Tokenizer, tokDir: string, modelVocab: number): void {
  if (tokenizer.vocabSize > modelVocab)
    throw new UsageError(
      `The tokenizer of \`${tokDir}\` has ${tokenizer.vocabSize} ids but the model's vocabulary has ${modelVocab}; give the model's own tokenizer with --tokenizer.`,
    );
}

/** The target of an opened engine: its vocabulary checked against the tokenizer (the engine is freed if it fails). */
function target(
  engine: LocalEngine | TorchEngine,
  dir: string,
  modelDir: string,
  opened: { tokenizer: Tokenizer; tokDir: string },
  name: string | undefined,
  sizes: { contextLength: number; vocabSize: number },
  topLogprobs: ServeTarget['topLogprobs'],
): ServeTarget {
  try {
    checkVocab(opened.tokenizer, opened.tokDir, sizes.vocabSize);
  } catch (e) {
    engine.dispose();
    throw e;
  }
  return {
    modelDir,
    engine,
    tokenizer: opened.tokenizer,
    modelName: name ?? basename(resolve(dir)),
    ...sizes,
    topLogprobs,
    dispose: () => engine.dispose(),
  };
}

/** A checkpoint on the local engine, whose `top_logprobs` come from a teacher-forced pass of the same model. */
export async function localServeTarget(
  dir: string,
  resolveModelDir: ModelDirResolver,
  opts: ServeTokenizerOptions & { name?: string } = {},
): Promise<ServeTarget> {
  const modelDir = resolveModelDir(dir);
  const opened = openTokenizer(modelDir, opts);
  const engine = await LocalEngine.fromPretrained(modelDir, { decode: (ids) => opened.tokenizer.decode(ids) });
  const cfg = engine.policy.config;
  return target(
    engine,
    dir,
    modelDir,
    opened,
    opts.name,
    { contextLength: cfg.maxPositionEmbeddings, vocabSize: cfg.vocabSize },
    localTopLogprobs(engine.policy),
  );
}

/**
 * A checkpoint on the torch engine (a PyTorch worker process). Its worker returns whole generations, so streams
 * are sent when a batch finishes; it has no `top_logprobs` source (such requests get a 400). A Qwen2.5-VL checkpoint
 * reads chat images: the engine sends each request's to the worker as pixel values.
 */
export async function torchServeTarget(
  dir: string,
  resolveModelDir: ModelDirResolver,
  opts: ServeTokenizerOptions & { name?: string; torch?: TorchServeOptions } = {},
): Promise<ServeTarget> {
  const modelDir = resolveModelDir(dir);
  const opened = openTokenizer(modelDir, opts);
  const cfg = await loadTextConfig(modelDir); // a Qwen2.5-VL's positions are its language model's
  const t = opts.torch ?? {};
  const engine = await TorchEngine.fromPretrained(modelDir, {
    decode: (ids) => opened.tokenizer.decode(ids),
    ...(t.device ? { device: t.device } : {}),
    ...(t.precision ? { precision: t.precision } : {}),
    ...(t.python ? { python: t.python } : {}),
  });
  return target(
    engine,
    dir,
    modelDir,
    opened,
    opts.name,
    { contextLength: cfg.maxPositionEmbeddings, vocabSize: engine.vocabSize },
    undefined,
  );
}
