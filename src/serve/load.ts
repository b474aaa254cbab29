// Opening what `ragen serve` serves: a model directory or a run directory (its latest checkpoint) on the
// local engine, with its own tokenizer and top_logprobs scoring.
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { LocalEngine } from '../engine/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { UsageError } from '../util/index.js';
import type { ServeOptions } from './server.js';
import { localTopLogprobs } from './top-logprobs.js';

/** A model directory: `dir` itself if it holds config.json, else the highest `checkpoints/step-N` of a run. */
export type ModelDirResolver = (dir: string) => string;

/**
 * The engine, tokenizer and model facts `OpenAIServer` needs for a checkpoint on the local engine. The tokenizer
 * is the checkpoint's own (tokenizer.json + tokenizer_config.json with its chat template), else `tokenizerDir`.
 */
export async function localServeTarget(dir: string, resolveModelDir: ModelDirResolver, opts: { tokenizerDir?: string; name?: string } = {}): Promise<Pick<ServeOptions, 'engine' | 'tokenizer' | 'modelName' | 'contextLength' | 'vocabSize' | 'topLogprobs'> & { modelDir: string }> {
  const modelDir = resolveModelDir(dir);
  const tokDir = opts.tokenizerDir ?? (existsSync(join(modelDir, 'tokenizer.json')) ? modelDir : undefined);
  if (!tokDir) throw new UsageError(`\`${modelDir}\` has no tokenizer.json; pass --tokenizer <dir> (e.g. ${tinyTokenizerDir()}).`);
  const tokenizer = loadTokenizer(tokDir);
  const engine = await LocalEngine.fromPretrained(modelDir, { decode: (ids) => tokenizer.decode(ids) });
  const cfg = engine.policy.config;
  if (tokenizer.vocabSize > cfg.vocabSize) throw new UsageError(`The tokenizer of \`${tokDir}\` has ${tokenizer.vocabSize} ids but the model's vocabulary has ${cfg.vocabSize}; give the model's own tokenizer with --tokenizer.`);
  return {
    modelDir,
    engine,
    tokenizer,
    modelName: opts.name ?? basename(resolve(dir)),
    contextLength: cfg.maxPositionEmbeddings,
    vocabSize: cfg.vocabSize,
    topLogprobs: localTopLogprobs(engine.policy),
  };
}
