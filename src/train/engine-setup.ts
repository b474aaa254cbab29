// Opening the trainer's engine and tokenizer from the config: the model directory for a fresh run, or a
// checkpoint for a resumed one (policy, critic, LoRA adapters and optimizer state from the checkpoint; the
// frozen reference of a full fine-tune always from `model.path`, the weights the run started from).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { needsCritic } from '../algo/index.js';
import type { RagenConfig } from '../config/index.js';
import {
  checkCheckpointFits,
  frozenBf16,
  isVisionCheckpoint,
  storeFrozen,
  LocalEngine,
  TorchEngine,
  type LocalPretrainedOptions,
} from '../engine/index.js';
import { ADAPTER_DIR, loadModel, resolveModelPath, ValueHead } from '../model/index.js';
import { getBackend, setBackend } from '../tensor/index.js';
import { runTokenizer, type ChatTemplateChoice, type Tokenizer } from '../tokenizer/index.js';
import { ConfigError } from '../util/index.js';
import type { VerifyCheckpointOptions } from '../metrics/index.js';
import { openModelDir } from './checkpoint-read.js';

/** The engine and tokenizer of a run. */
export interface TrainerModels {
  engine: LocalEngine | TorchEngine;
  tokenizer: Tokenizer;
}

/**
 * The tokenizer of a model directory (its tokenizer.json), else the shipped tiny tokenizer; `chatTemplate` as
 * `model.chatTemplate`.
 */
export function modelTokenizer(dir: string, chatTemplate: ChatTemplateChoice = 'model'): Tokenizer {
  return runTokenizer(dir, chatTemplate);
}

/**
 * `config` with `model.path` and `model.critic.path` as the directories they mean (the user's path, a shipped model
 * such as `ragen-tiny`, or a Hub id's snapshot, downloaded if needed): the run's saved config then names the exact
 * weights it started from. A path that is a checkpoint (another run's `checkpoints/step-N/`) is verified against its
 * manifest first, as every reader of a run does (`opts`: see verifyCheckpoint).
 */
export async function withModelPaths(config: RagenConfig, opts: VerifyCheckpointOptions = {}): Promise<RagenConfig> {
  const m = config.model;
  const path = openModelDir(await resolveModelPath(m.path), opts);
  const criticPath =
    m.critic.path === null
      ? null
      : openModelDir(await resolveModelPath(m.critic.path, { key: 'model.critic.path' }), opts);
  if (path === m.path && criticPath === m.critic.path) return config;
  const critic = Object.freeze({ ...m.critic, path: criticPath });
  return Object.freeze({ ...config, model: Object.freeze({ ...m, path, critic }) });
}

/** Whether the run needs the frozen reference model (`model.reference`; `auto` = a KL term is on). */
export function needsReference(config: RagenConfig): boolean {
  const r = config.model.reference;
  return r === 'always' || (r === 'auto' && (config.algo.kl.useKlLoss || config.algo.kl.inReward));
}

/**
 * `LocalEngine.fromPretrained` options: backend, LoRA, critic layout (only for estimators with a critic), reference.
 */
export function localEngineOptions(config: RagenConfig): Omit<LocalPretrainedOptions, 'decode'> {
  const m = config.model;
  const modules = m.lora.targetModules;
  const critic = needsCritic(config.algo.advEstimator);
  return {
    backend: m.backend,
    lora:
      m.lora.rank > 0
        ? {
            r: m.lora.rank,
            alpha: m.lora.alpha,
            dropout: m.lora.dropout,
            targetModules: modules.length === 1 && modules[0] === 'all-linear' ? 'all-linear' : [...modules],
          }
        : null,
    critic: critic ? m.critic.mode : null,
    ...(critic && m.critic.path !== null ? { criticPath: m.critic.path } : {}),
    reference: needsReference(config),
    frozenDtype: m.frozenDtype,
    gradientCheckpointing: m.gradientCheckpointing,
    seed: config.seed.train,
    ...(m.vision.train ? { visionTrain: true } : {}),
  };
}

/**
 * The engine of `config` (`model.engine`), loaded from `model.path`, or from checkpoint directory `from` (with its
 * optimizer state when the checkpoint holds one).
 */
export async function openModels(config: RagenConfig, from?: string): Promise<TrainerModels> {
  if (config.model.engine !== 'torch') return openLocalModels(config, from);
  const tokenizer = modelTokenizer(from ?? config.model.path, config.model.chatTemplate);
  const opts = { ...localEngineOptions(config), decode: (ids: number[]) => tokenizer.decode(ids) };
  return { engine: await openTorch(config, opts, tokenizer.vocabSize, from), tokenizer };
}

/** `openModels` with the local engine whatever `model.engine` says (tests and tools that read its tensors). */
export async function openLocalModels(
  config: RagenConfig,
  from?: string,
): Promise<{ engine: LocalEngine; tokenizer: Tokenizer }> {
  const m = config.model;
  const dir = from ?? m.path;
  const tokenizer = modelTokenizer(dir, m.chatTemplate);
  const decode = (ids: number[]) => tokenizer.decode(ids);
  const opts = { ...localEngineOptions(config), decode };
  if (
    needsCritic(config.algo.advEstimator) &&
    from &&
    opts.critic === 'separate' &&
    !existsSync(join(from, 'critic', 'config.json'))
  ) {
    throw new ConfigError(
      `Checkpoint \`${from}\` has no critic/ but the config's estimator \`${config.algo.advEstimator}\` needs a separate critic.`,
    );
  }
  let engine: LocalEngine;
  if (from && (await isVisionCheckpoint(from))) {
    // A VLM checkpoint holds its whole model; a full fine-tune's reference would be `model.path`, not it.
    if (opts.reference && !(opts.lora || existsSync(join(from, ADAPTER_DIR, 'adapter_config.json'))))
      throw new ConfigError(
        `Resuming the vision-language checkpoint \`${from}\` with a full fine-tune's reference model is not written yet for the local engine (the reference would be loaded from the checkpoint instead of model.path); resume with LoRA (model.lora.rank > 0), or without a KL term.`,
      );
    engine = await LocalEngine.fromPretrained(from, opts);
  } else if (from) {
    // Built here rather than by fromPretrained: the reference of a full fine-tune is `model.path`, not the
    // checkpoint, and the tokenizer copied into later checkpoints must outlive pruned ones (`model.path`'s).
    if (opts.backend && opts.backend !== 'auto') setBackend(opts.backend);
    else getBackend();
    await checkCheckpointFits(from, opts);
    const bf16 = frozenBf16(from, opts);
    const { model: policy, valueHead } = await loadModel(from, { frozenBf16: bf16.policy });
    const seed = opts.seed ?? 0;
    const reference = opts.reference
      ? policy.lora
        ? 'base'
        : (await loadModel(m.path, { adapters: false, frozenBf16: bf16.reference })).model
      : null;
    storeFrozen(policy, reference, opts.frozenDtype);
    let critic: ConstructorParameters<typeof LocalEngine>[0]['critic'] = null;
    if (opts.critic === 'shared')
      critic = { mode: 'shared', valueHead: valueHead ?? ValueHead.init(policy.config.hiddenSize, seed + 2) };
    if (opts.critic === 'separate') {
      const c = await loadModel(join(from, 'critic'), { adapters: false });
      critic = {
        mode: 'separate',
        model: c.model,
        valueHead: c.valueHead ?? ValueHead.init(c.model.config.hiddenSize, seed + 2),
      };
    }
    const tokenizerPath = join(m.path, 'tokenizer.json');
    engine = new LocalEngine({
      policy,
      reference,
      critic,
      seed,
      decode,
      gradientCheckpointing: opts.gradientCheckpointing ?? false,
      ...(existsSync(tokenizerPath) ? { tokenizerPath } : {}),
    });
  } else {
    engine = await LocalEngine.fromPretrained(dir, opts);
  }
  if (engine.policy.config.vocabSize < tokenizer.vocabSize) {
    throw new ConfigError(
      `The model in \`${dir}\` has ${engine.policy.config.vocabSize} token embeddings but its tokenizer has ${tokenizer.vocabSize} tokens; put the model's own tokenizer.json in the directory.`,
    );
  }
  if (from && existsSync(join(from, 'optimizer'))) await engine.loadOptimizer(from);
  return { engine, tokenizer };
}

/**
 * The torch engine for `config` (`model.engine: torch`): the worker loads `model.path`, or checkpoint `from` and its
 * optimizer state.
 */
async function openTorch(
  config: RagenConfig,
  opts: ReturnType<typeof localEngineOptions> & { decode: (ids: number[]) => string },
  tokenizerVocab: number,
  from?: string,
): Promise<TorchEngine> {
  const m = config.model;
  const tokenizerPath = join(m.path, 'tokenizer.json');
  const engine = await TorchEngine.fromPretrained(from ?? m.path, {
    lora: opts.lora ?? null,
    critic: opts.critic ?? null,
    reference: opts.reference ?? false,
    seed: opts.seed ?? 0,
    decode: opts.decode,
    device: m.torch.device,
    precision: m.torch.precision,
    tokenBudget: m.torch.tokenBudget,
    ranks: m.torch.ranks,
    nodes: m.torch.nodes,
    ...(m.torch.master ? { master: m.torch.master } : {}),
    gradientCheckpointing: m.torch.gradientCheckpointing,
    packing: m.torch.packing,
    ...(m.torch.graphTokenBudget !== null ? { graphTokenBudget: m.torch.graphTokenBudget } : {}),
    rolloutCopy: m.torch.rolloutCopy,
    compile: m.torch.compile,
    visionTrain: m.vision.train,
    // Resuming: the critic is the checkpoint's, the reference of a full fine-tune the weights the run started from.
    ...(from ? { referencePath: m.path } : opts.criticPath ? { criticPath: opts.criticPath } : {}),
    ...(existsSync(tokenizerPath) ? { tokenizerPath } : {}),
  });
  try {
    if (engine.vocabSize < tokenizerVocab) {
      throw new ConfigError(
        `The model in \`${from ?? m.path}\` has ${engine.vocabSize} token embeddings but its tokenizer has ${tokenizerVocab} tokens; put the model's own tokenizer.json in the directory.`,
      );
    }
    if (from && existsSync(join(from, 'optimizer'))) await engine.loadOptimizer(from);
  } catch (e) {
    engine.dispose();
    throw e;
  }
  return engine;
}
