// Opening a run, fresh or resumed, in one sequence: the run directory (a new one, or the resumed one rolled back to
// its checkpoint), remote envs registered, the config checked, model paths resolved, the models opened (from the
// checkpoint on a resume), every tag's first prompt checked against the context budget.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { registerRemoteEnvs } from '../env/remote/index.js';
import { checkPromptBudget, checkRunConfig, envTags, type RagenConfig } from '../config/index.js';
import type { TrainableRole } from '../engine/index.js';
import { assertNewRunDir, type RunPaths } from '../metrics/index.js';
import { CheckpointError } from '../util/index.js';
import { openModels, withModelPaths, type TrainerModels } from './engine-setup.js';
import { hasOptimizerState } from './optimizer-state.js';
import { createRun, recordResume, resumeRun } from './run-setup.js';
import type { MetricSink } from '../metrics/index.js';

/** Options of `train`: a fresh run from `config`, or `resume` of a run directory. */
export interface TrainOptions {
  /** The resolved config of a fresh run (see `loadConfig`). */
  config?: RagenConfig;
  /** A run directory to continue from its latest complete checkpoint (its saved config is used). */
  resume?: string;
  /** `dotted.key=value` overrides applied to a resumed run's saved config (e.g. `trainer.steps=400`). */
  overrides?: readonly string[];
  /** Stop after this step (checkpointed, resumable), as if the run were interrupted there. */
  stopAfter?: number;
  /** Extra metric sinks (tests, dashboards). */
  sinks?: MetricSink[];
  /** Where the console sink writes. @default process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Use this engine and tokenizer instead of loading `model.path` (tests). */
  models?: TrainerModels;
  /**
   * Resume from a checkpoint that lacks its optimizer state with fresh AdamW moments (a warning is printed; the run
   * then differs from an uninterrupted one). Without it such a resume is refused. @default false
   */
  freshOptimizer?: boolean;
  /**
   * Read a checkpoint (the one resumed, or a `model.path` that is another run's checkpoint) whose manifest records no
   * SHA-256 digests (the version-1 format), its files checked by size only (`--allow-unverified-checkpoint`; a warning
   * is printed). Without it such a checkpoint is refused. @default false
   */
  allowUnverifiedCheckpoint?: boolean;
}

/** A run ready for its first step. */
export interface OpenedRun {
  config: RagenConfig;
  paths: RunPaths;
  /** The step the run resumes after (0 for a fresh run). */
  startStep: number;
  /** The checkpoint's trainer state (RunState's pieces; empty for a fresh run). */
  saved: Record<string, unknown>;
  models: TrainerModels;
  /** The models were opened here (the run disposes them), not lent by the caller (`TrainOptions.models`). */
  ownsModels: boolean;
  /** Optimizer state the resumed checkpoint lacks, as words for a warning (null: none lost, or a fresh run). */
  lost: string | null;
}

/** Open the run `options` asks for: a fresh one from `options.config`, or `options.resume`'s continuation. */
export async function openRun(options: TrainOptions): Promise<OpenedRun> {
  const verify = { allowUnverified: options.allowUnverifiedCheckpoint === true }; // for every checkpoint read
  if (options.resume === undefined && !options.config)
    throw new TypeError('train: give `config` (a fresh run) or `resume` (a run directory).');
  const resumed = options.resume !== undefined ? resumeRun(options.resume, options.overrides ?? [], verify) : null;
  let config = resumed ? resumed.config : options.config!;
  await registerRemoteEnvs(envTags(config));
  checkRunConfig(config, { skipModel: options.models !== undefined });
  if (!options.models) config = await withModelPaths(config, verify); // a Hub id not cached yet downloads here
  const saved = (resumed?.state.trainer ?? {}) as Record<string, unknown>;
  let lost: string | null = null;
  if (resumed) {
    lost = lostOptimizerState(resumed.checkpoint.dir, saved.optimizerRoles as TrainableRole[] | undefined);
    if (lost !== null && config.trainer.saveOptimizer && !options.freshOptimizer) {
      throw new CheckpointError(
        `checkpoint \`${resumed.checkpoint.dir}\` has no ${lost} (trainer.saveOptimizer is on, so it was lost): resuming would restart AdamW's moments and the run would no longer match an uninterrupted one. Resume anyway with \`--fresh-optimizer\`, or from an earlier checkpoint.`,
      );
    }
  } else if (config.logging.runDir) assertNewRunDir(config.logging.runDir); // before any model is loaded
  const models = options.models ?? (await openModels(config, resumed?.checkpoint.dir));
  await promptsFit(config, models, options.models === undefined);
  let paths: RunPaths;
  if (resumed) {
    paths = resumed.paths;
    const afterStep = resumed.checkpoint.step;
    recordResume(paths, config, { afterStep, overrides: options.overrides ?? [], freshOptimizer: lost !== null });
  } else paths = createRun(config);
  const startStep = resumed?.checkpoint.step ?? 0;
  return { config, paths, startStep, saved, models, ownsModels: options.models === undefined, lost };
}

/**
 * The context budget holds every tag's first prompt (before any step or run directory); frees `models` it owns on
 * failure.
 */
async function promptsFit(config: RagenConfig, models: TrainerModels, owned: boolean): Promise<void> {
  try {
    await checkPromptBudget(config, models.tokenizer, models.engine.maxPositions);
  } catch (err) {
    if (owned) models.engine.dispose();
    throw err;
  }
}

/**
 * What optimizer state checkpoint `dir` lacks, as words for a message ("optimizer/ state", "optimizer state for the
 * critic (optimizer/critic.safetensors)"), or null when it holds all of it: the whole folder, and every role `recorded`
 * as saved with it. Checkpoints of older versions record no roles: only the folder is checked there.
 */
function lostOptimizerState(dir: string, recorded: readonly TrainableRole[] | undefined): string | null {
  if (!existsSync(join(dir, 'optimizer'))) return 'optimizer/ state';
  const missing = (recorded ?? []).filter((role) => !hasOptimizerState(dir, role));
  if (missing.length === 0) return null;
  return `optimizer state for the ${missing.join(' and the ')} (${missing.map((r) => `optimizer/${r}.safetensors`).join(', ')}), though it was saved with the checkpoint`;
}
