// `ragen model init`: a ready model directory from a named published shape (python/ragen_torch/shapes.json):
// config.json
// as Hugging Face publishes it, random weights streamed to safetensors, and the offline Qwen tokenizer with our
// template.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import {
  configFromHF,
  countParameters,
  modelShape,
  shapeNames,
  vlTextConfig,
  vlWeightShapes,
  writeRandomWeights,
  type InitDtype,
} from '../../model/index.js';
import {
  QWEN25_VL_PROCESSOR,
  qwen25PreprocessorConfig,
  qwenTokenizerFiles,
  ragenQwenTemplate,
} from '../../tokenizer/index.js';
import { didYouMean, makeDir, parseSeed, UsageError, withFileErrors, writeFileAt } from '../../util/index.js';

/** Options of `ragen model init`, as commander parses them. */
interface InitOptions {
  shape: string;
  out: string;
  seed: number;
  dtype: 'bf16' | 'f32';
  force?: boolean;
  maxShardMb?: number;
}

const DTYPES: Record<string, { safetensors: InitDtype; torch: string }> = {
  bf16: { safetensors: 'BF16', torch: 'bfloat16' },
  f32: { safetensors: 'F32', torch: 'float32' },
};

/** Qwen2.5-VL's published preprocessor_config.json (src/tokenizer's `qwen25PreprocessorConfig`). */
const QWEN25_VL_PREPROCESSOR = qwen25PreprocessorConfig(QWEN25_VL_PROCESSOR);

/** Qwen3-VL's published preprocessor_config.json: patch 16, pixel bounds 256 x 256 to 4096 x 4096, mean and std 0.5. */
const QWEN3_VL_PREPROCESSOR = {
  size: { longest_edge: 16777216, shortest_edge: 65536 },
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
  image_mean: [0.5, 0.5, 0.5],
  image_std: [0.5, 0.5, 0.5],
  processor_class: 'Qwen3VLProcessor',
  image_processor_type: 'Qwen2VLImageProcessorFast',
};

/** What `initModelDir` wrote. */
export interface InitResult {
  shape: string;
  parameters: number;
  bytes: number;
  files: string[];
}

/**
 * Write the model directory of shape `name` into `out`: config.json, generation_config.json, tokenizer.json,
 * tokenizer_config.json (our append-only template) and the weights (`weights: false` skips them: tests of the big
 * shapes' configs). `out` must hold no model unless `force`.
 */
export async function initModelDir(
  out: string,
  name: string,
  opts: {
    seed?: number;
    dtype?: 'bf16' | 'f32';
    force?: boolean;
    maxShardBytes?: number;
    onProgress?: (written: number, total: number) => void;
    weights?: boolean;
  } = {},
): Promise<InitResult> {
  const shape = modelShape(name);
  const dtype = DTYPES[opts.dtype ?? 'bf16']!;
  const stale = existsSync(out)
    ? readdirSync(out).filter((f) => f === 'config.json' || /^model.*\.safetensors(\.index\.json)?$/.test(f))
    : [];
  if (stale.length > 0 && !opts.force)
    throw new UsageError(
      `\`${out}\` already holds a model (${stale.join(', ')}); choose an empty folder or pass --force to replace it.`,
    );
  const hf: Record<string, unknown> = { ...shape.config, torch_dtype: dtype.torch };
  const vl = shape.family === 'qwen2.5-vl' || shape.family === 'qwen3-vl';
  const config = vl ? vlTextConfig(hf, `shape ${shape.name}`) : configFromHF(hf, `shape ${shape.name}`);
  const shapes = vl ? vlWeightShapes(hf, `shape ${shape.name}`) : undefined;
  const family = shape.family === 'qwen3' || shape.family === 'qwen3-vl' ? 'qwen3' : 'qwen2.5';
  const tokenizer = qwenTokenizerFiles(family, ragenQwenTemplate(family));
  makeDir(out, 'write the model folder', '--out'); // never Node's recursive mkdir: it loops forever under /proc
  withFileErrors('write the model folder', out, () => {
    for (const f of stale) rmSync(join(out, f));
    const json = (file: string, value: unknown) =>
      writeFileAt(join(out, file), JSON.stringify(value, null, 2) + '\n', 'write the model folder', '--out');
    json('config.json', hf);
    json('generation_config.json', { bos_token_id: hf['bos_token_id'], eos_token_id: hf['eos_token_id'] });
    json('tokenizer.json', tokenizer.tokenizerJson);
    json('tokenizer_config.json', tokenizer.tokenizerConfig);
    if (vl)
      json('preprocessor_config.json', shape.family === 'qwen3-vl' ? QWEN3_VL_PREPROCESSOR : QWEN25_VL_PREPROCESSOR);
  });
  const meta = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
  if (vl) meta.push('preprocessor_config.json');
  const parameters = shapes
    ? [...shapes.values()].reduce((n, s) => n + s.reduce((a, b) => a * b, 1), 0)
    : countParameters(config);
  if (opts.weights === false) return { shape: shape.name, parameters, bytes: 0, files: meta };
  const weights = await writeRandomWeights(out, config, {
    ...(shapes ? { shapes } : {}),
    seed: opts.seed ?? 0,
    dtype: dtype.safetensors,
    metadata: { ragen_shape: shape.name, ragen_seed: String(opts.seed ?? 0) },
    ...(opts.maxShardBytes === undefined ? {} : { maxShardBytes: opts.maxShardBytes }),
    ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
  });
  return {
    shape: shape.name,
    parameters: weights.parameters,
    bytes: weights.bytes,
    files: [...meta, ...weights.files],
  };
}

/** A progress bar on a terminal, a line per quarter otherwise (logs of a GPU check); nothing for small models. */
function progress(label: string): { update: (written: number, total: number) => void; stop: () => void } {
  const bigEnough = (total: number) => total >= 256 * 2 ** 20;
  if (process.stderr.isTTY) {
    let bar: cliProgress.SingleBar | undefined;
    return {
      update(written, total) {
        if (!bigEnough(total)) return;
        if (!bar) {
          bar = new cliProgress.SingleBar(
            { format: `${label} [{bar}] {percentage}% | {value}/{total} MB | {eta}s left`, stream: process.stderr },
            cliProgress.Presets.shades_classic,
          );
          bar.start(Math.round(total / 2 ** 20), 0);
        }
        bar.update(Math.round(written / 2 ** 20));
      },
      stop: () => bar?.stop(),
    };
  }
  let next = 0.25;
  return {
    update(written, total) {
      if (!bigEnough(total) || written / total < next) return;
      console.error(
        `${label}: ${Math.round((100 * written) / total)}% (${(written / 2 ** 30).toFixed(2)} of ${(total / 2 ** 30).toFixed(2)} GiB)`,
      );
      next += 0.25;
    },
    stop: () => {},
  };
}

const HELP = `
Writes a model directory that \`ragen train\`, \`ragen eval\`, \`ragen serve\` (either engine) and transformers load:
  config.json                 the shape's published Hugging Face config (Qwen2.5/Qwen3 Instruct), torch_dtype = --dtype
  generation_config.json      bos/eos ids
  model.safetensors           random weights N(0, 0.02), norms 1, biases 0, seeded by --seed (same seed, same bytes);
                              model-0000k-of-0000n.safetensors + model.safetensors.index.json above --max-shard-mb
  tokenizer.json              Qwen's tokenizer, shipped through npm (Qwen2.5's: without Qwen3's 4 added tokens)
  tokenizer_config.json       with ragen's append-only chat template (Qwen2.5's rendering, history verbatim;
                              no default system prompt for qwen3 shapes); images sit in a message's text as
                              <|vision_start|><|image_pad|><|vision_end|>
  preprocessor_config.json    VL shapes: Qwen's image processor settings (pixel bounds, patch, mean/std)
The weights are random: the directory is for measuring speed and memory and for testing the pipeline, not a trained model.
Shapes: the published qwen2.5-0.5b/1.5b/3b/7b, qwen3-0.6b/1.7b, qwen2.5-vl-3b/7b and qwen3-vl-4b (the VLMs: the
torch engine loads them), and qwen2.5-tiny / qwen3-tiny / qwen2.5-vl-tiny / qwen3-vl-tiny (the full vocabulary,
width 64, 2 layers: seconds on a CPU). Sizes in bf16: 0.5b 1.0 GB, 1.5b 3.1 GB,
3b 6.2 GB, 7b 15.2 GB (docs/models.md).

Examples:
  $ ragen model init --shape qwen2.5-0.5b --out models/qwen2.5-0.5b-random
  $ ragen train --config sokoban-ppo-qwen model.path=models/qwen2.5-0.5b-random
  $ ragen model init --shape qwen3-tiny --out /tmp/q3 --seed 1 --dtype f32`;

export function register(program: Command): void {
  const model = program
    .command('model')
    .description('Model directories: `ragen model init` writes a random-weight one of a published shape.');
  model
    .command('init')
    .description(
      'Write a ready model directory (config, random weights, tokenizer, append-only chat template) of a named published shape.',
    )
    .requiredOption('--shape <name>', `one of ${shapeNames().join(', ')}`)
    .requiredOption(
      '--out <dir>',
      'the model directory to write (created; must not already hold a model unless --force)',
    )
    .option('--seed <n>', 'seed of the random weights', parseSeed, 0)
    .option('--dtype <type>', 'weight type: bf16 (as published) or f32', parseDtype, 'bf16')
    .option('--max-shard-mb <n>', 'shard the weights Hugging Face-style above this many MiB a file', parseShardMb, 1024)
    .option('--force', 'replace a model already in --out')
    .addHelpText('after', HELP)
    .action(async (o: InitOptions) => {
      if (!shapeNames().includes(o.shape))
        throw new UsageError(
          `Bad --shape \`${o.shape}\`: give one of ${shapeNames().join(', ')}.${didYouMean(o.shape, shapeNames())}`,
        );
      const bar = progress(`writing ${o.shape}`);
      const t0 = Date.now();
      let r: InitResult;
      try {
        r = await initModelDir(o.out, o.shape, {
          seed: o.seed,
          dtype: o.dtype,
          force: Boolean(o.force),
          maxShardBytes: (o.maxShardMb ?? 1024) * 2 ** 20,
          onProgress: bar.update,
        });
      } finally {
        bar.stop();
      }
      const size =
        r.bytes >= 2 ** 30 ? `${(r.bytes / 2 ** 30).toFixed(2)} GiB` : `${(r.bytes / 2 ** 20).toFixed(1)} MiB`;
      console.log(
        `${o.out}: ${r.shape}, ${(r.parameters / 1e6).toFixed(1)}M parameters (${o.dtype}, ${size}), seed ${o.seed}, in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      console.log(`  files: ${r.files.join(', ')}`);
      const family = modelShape(o.shape).family;
      if (family === 'qwen2.5-vl') console.log('  both engines load, sample and train it with images (docs/vision.md)');
      else if (family.endsWith('-vl'))
        console.log('  the torch engine loads it (python/ragen_torch/vision_qwen3.py); the local engine does not yet');
      else console.log(`  train it: ragen train --config sokoban-ppo-qwen model.path=${o.out}`);
    });
}

function parseDtype(v: string): 'bf16' | 'f32' {
  if (v !== 'bf16' && v !== 'f32') throw new UsageError(`Bad --dtype \`${v}\`: give bf16 or f32.`);
  return v;
}

function parseShardMb(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`Bad --max-shard-mb \`${v}\`: give a whole number of MiB, at least 1.`);
  return n;
}
