// The StarPO training loop: validation before training, then per step a StarPO update (step.ts), echo-trap
// warnings, rollouts saved, early stops checked, validation every `valEvery` steps, a checkpoint every
// `checkpointEvery`; `resume` continues a run from its latest checkpoint so that the metrics of the remaining
// steps equal an uninterrupted run's.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EnvGroups, writeEpisodeRecords } from '../agent/index.js';
import { KLController } from '../algo/index.js';
import {
  assertNewRunDir,
  MetricLogger,
  openRunSinks,
  rolloutFile,
  summaryTable,
  type LoggerState,
  type MetricSink,
  type RunPaths,
  type RunSinks,
  type SummaryRow,
} from '../metrics/index.js';
import { writeCheckpoint } from './checkpoint-io.js';
import { hasOptimizerState, optimizerRoles } from './optimizer-state.js';
import type { TrainableRole } from '../engine/index.js';
import type { CollapseEma } from './collapse-step.js';
import { resolveEnvId } from '../env/index.js';
import { registerRemoteEnvs, RemoteEnvError } from '../env/remote/index.js';
import {
  agentEntries,
  checkPromptBudget,
  checkRunConfig,
  entryTags,
  envGroupsOptions,
  envTags,
  tagEntries,
  type RagenConfig,
} from '../config/index.js';
import { openGateway } from './agent-source.js';
import type { Gateway } from '../gateway/index.js';
import { EarlyStopTracker, type EarlyStop, type EarlyStopState } from './early-stop.js';
import { EarlyWarningMonitor, type EarlyWarningState } from './early-warning-step.js';
import { openModels, withModelPaths, type TrainerModels } from './engine-setup.js';
import { abandonRun, createRun, recordResume, resumeRun } from './run-setup.js';
import { starpoStep, type StepContext } from './step.js';
import { AsyncRollouts } from './async-rollouts.js';
import { validate } from './validate.js';
import { sayOnInterrupt } from './interrupt.js';
import { CheckpointError } from '../util/index.js';
import { NonFiniteLogitsError } from '../model/index.js';

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

/** What a finished (or stopped) run reports. */
export interface TrainResult {
  runDir: string;
  config: RagenConfig;
  /** The step the run resumed after (0 for a fresh run). */
  startStep: number;
  /** The last completed step. */
  lastStep: number;
  earlyStop: EarlyStop | null;
  /** Validation success per val tag before training and at the last validation. */
  summary: SummaryRow[];
  /** `summary` as an aligned text table. */
  summaryText: string;
}

/** Trainer bookkeeping saved with every checkpoint (plain JSON). */
interface LoopState {
  klCoef: number;
  collapseEma: CollapseEma;
  earlyStop: EarlyStopState;
  earlyWarning: EarlyWarningState;
  logger: LoggerState;
  valBefore: Record<string, number> | null;
  lastVal: Record<string, number> | null;
  /** Roles whose optimizer state the checkpoint holds (absent in checkpoints of older versions). */
  optimizerRoles?: TrainableRole[];
}

/** Train (or continue training) a policy with StarPO; see TrainOptions. */
export async function train(options: TrainOptions): Promise<TrainResult> {
  let config: RagenConfig;
  let paths: RunPaths;
  let startStep = 0;
  let saved: Partial<LoopState> = {};
  let models: TrainerModels;
  let lost: string | null = null; // optimizer state a resumed checkpoint lacks
  const verify = { allowUnverified: options.allowUnverifiedCheckpoint === true }; // for every checkpoint read
  if (options.resume !== undefined) {
    const r = resumeRun(options.resume, options.overrides ?? [], verify);
    config = r.config;
    await registerRemoteEnvs(envTags(config));
    checkRunConfig(config, { skipModel: options.models !== undefined });
    if (!options.models) config = await withModelPaths(config, verify); // a Hub id not cached yet downloads here
    paths = r.paths;
    startStep = r.checkpoint.step;
    saved = (r.state.trainer ?? {}) as Partial<LoopState>;
    lost = lostOptimizerState(r.checkpoint.dir, saved.optimizerRoles);
    if (lost !== null && config.trainer.saveOptimizer && !options.freshOptimizer) {
      throw new CheckpointError(
        `checkpoint \`${r.checkpoint.dir}\` has no ${lost} (trainer.saveOptimizer is on, so it was lost): resuming would restart AdamW's moments and the run would no longer match an uninterrupted one. Resume anyway with \`--fresh-optimizer\`, or from an earlier checkpoint.`,
      );
    }
    models = options.models ?? (await openModels(config, r.checkpoint.dir));
    await promptsFit(config, models, options.models === undefined);
    recordResume(paths, config, {
      afterStep: startStep,
      overrides: options.overrides ?? [],
      freshOptimizer: lost !== null,
    });
  } else {
    if (!options.config) throw new TypeError('train: give `config` (a fresh run) or `resume` (a run directory).');
    config = options.config;
    await registerRemoteEnvs(envTags(config));
    checkRunConfig(config, { skipModel: options.models !== undefined });
    if (!options.models) config = await withModelPaths(config, verify); // a Hub id not cached yet downloads here
    if (config.logging.runDir) assertNewRunDir(config.logging.runDir); // before any model is loaded
    models = options.models ?? (await openModels(config));
    await promptsFit(config, models, options.models === undefined);
    paths = createRun(config);
  }
  const { engine, tokenizer } = models;
  const t = config.trainer;
  const agent = config.agent;
  const groups = tagEntries(config, 'train').length > 0 ? new EnvGroups(envGroupsOptions(config, 'train')) : null;
  const klCfg = config.algo.kl;
  const kl = new KLController(
    klCfg.controller.type === 'fixed'
      ? { type: 'fixed', klCoef: klCfg.coef }
      : { type: 'adaptive', klCoef: klCfg.coef, targetKl: klCfg.controller.target, horizon: klCfg.controller.horizon },
  );
  if (saved.klCoef !== undefined) kl.value = saved.klCoef;
  const tracker = new EarlyStopTracker(t.earlyStop);
  if (saved.earlyStop) tracker.state = saved.earlyStop;
  const warnings = new EarlyWarningMonitor();
  if (saved.earlyWarning) warnings.state = saved.earlyWarning;
  const ctx: StepContext = { config, engine, tokenizer, agent, groups, kl, collapseEma: saved.collapseEma ?? {} };
  let opened: RunSinks;
  let gateway: Gateway | undefined;
  try {
    const l = config.logging;
    opened = await openRunSinks({
      paths,
      sinks: l.sinks,
      wandb: l.wandb,
      config,
      console: l.console,
      totalSteps: t.steps,
      startStep,
      ...(options.stream ? { stream: options.stream } : {}),
    });
    // One gateway for the run's agent entries (closed in the finally below; a signal exits through the runner's exit
    // hook).
    if (agentEntries(config, 'train').length > 0)
      gateway = ctx.gateway = await openGateway(config, engine, tokenizer, 'train', (line) =>
        opened.consoleLog.append(`gateway: ${line}\n`),
      );
  } catch (err) {
    await groups?.close();
    if (!options.models) engine.dispose();
    // A fresh run that never took a step must not block its own retry ("already holds a run", then "no checkpoint").
    if (options.resume === undefined && err instanceof Error)
      err.message = `${err.message.replace(/\.?$/, '.')} ${abandonRun(paths)}`;
    throw err;
  }
  let current = startStep; // the step being trained, for the interrupt message
  // Ctrl-C says what was kept and how to continue; with agent programs it exits through process.exit, whose hook kills
  // them
  const stopOnSignal = sayOnInterrupt(
    { runDir: paths.root, checkpoints: paths.checkpoints, totalSteps: t.steps, startStep, step: () => current },
    { exit: gateway !== undefined },
  );
  const logger = new MetricLogger([...opened.sinks, ...(options.sinks ?? [])], { every: config.logging.logEvery });
  ctx.log = (line) => logger.message(line);
  if (saved.logger) logger.setState(saved.logger);
  let valBefore = saved.valBefore ?? null;
  let lastVal = saved.lastVal ?? null;
  let earlyStop: EarlyStop | null = null;
  let lastStep = startStep;
  logger.message(`${startStep > 0 ? `resuming after step ${startStep}` : 'run'}: ${paths.root}`);
  for (const note of opened.notes) logger.message(note);
  if ('describe' in engine) logger.message(engine.describe()); // engines that say what runs them (TrainableEngine.describe)
  const end = Math.min(t.steps, options.stopAfter ?? Infinity);
  const ahead = t.async.enabled
    ? new AsyncRollouts(ctx, {
        maxStaleness: t.async.maxStaleness,
        importanceCap: t.async.importanceCap,
        startStep,
        endStep: end,
      })
    : null;
  if (ahead)
    logger.message(
      `async rollouts: up to ${t.async.maxStaleness} step(s) ahead, importance weights capped at ${t.async.importanceCap}`,
    );
  if (lost !== null)
    logger.message(
      `warning: the checkpoint has no ${lost}; AdamW starts from fresh moments there, so this run will differ from an uninterrupted one`,
    );
  try {
    if (startStep === 0 && t.valBeforeTrain) {
      const v = await validate(config, engine, tokenizer, agent, ctx.log);
      if (v) {
        valBefore = v.success;
        logger.log(v.metrics);
        logger.flush(0);
      }
    }
    let checkpointSeconds: number | undefined;
    let lastCheckpoint = startStep;
    for (let step = startStep + 1; step <= end; step++) {
      current = step;
      const t0 = performance.now();
      const out = await stepOrExplain(
        ahead ? ahead.step(step) : starpoStep(ctx, step),
        step,
        lastCheckpoint,
        paths.root,
      );
      logger.log(out.metrics);
      const w = warnings.afterStep(out.metrics);
      logger.log(w.metrics);
      for (const x of w.started) logger.message(`step ${step}: ${x.message}`);
      if (checkpointSeconds !== undefined) logger.log({ 'timing_s/checkpoint': checkpointSeconds }); // the previous step's write
      if (config.logging.rolloutsEvery > 0 && step % config.logging.rolloutsEvery === 0)
        writeEpisodeRecords(rolloutFile(paths, step), out.records);
      if (out.empty) logger.message(`step ${step}: the rollout filter kept no group; no update`);
      earlyStop = tracker.afterStep(out.empty, out.inGroupStd) ?? tracker.afterWarnings(w.started);
      const last = step === t.steps || earlyStop !== null;
      if (t.valEvery > 0 && (step % t.valEvery === 0 || last)) {
        const v = await validate(config, engine, tokenizer, agent, ctx.log);
        if (v) {
          lastVal = v.success;
          logger.log(v.metrics);
          earlyStop ??= tracker.afterValidation(v.success);
        }
      }
      if (earlyStop) {
        logger.log({ [earlyStop.key]: 1 });
        logger.message(`early stop after step ${step}: ${earlyStop.reason}`);
      }
      logger.log({ 'timing_s/step': (performance.now() - t0) / 1000 }); // once per step: starpoStep does not time itself
      if (earlyStop || step === t.steps)
        logger.flush(step); // a stop before the end keeps the interval pending (checkpointed)
      else logger.endStep(step);
      lastStep = step;
      if ((t.checkpointEvery > 0 && step % t.checkpointEvery === 0) || step === end || earlyStop) {
        const c0 = performance.now();
        const state: LoopState = {
          klCoef: kl.value,
          collapseEma: ctx.collapseEma,
          earlyStop: tracker.state,
          earlyWarning: warnings.state,
          logger: logger.getState(),
          valBefore,
          lastVal,
        };
        // writeCheckpoint serializes `state` after writeModel: the roles whose state the engine wrote are recorded, and
        // a
        // resume requires each of them (a role without state yet, e.g. the policy during critic warm-up, is not
        // required).
        const writeModel = async (dir: string) => {
          await engine.save(dir, { optimizer: t.saveOptimizer, maxShardBytes: t.checkpointShardBytes });
          if (t.saveOptimizer) state.optimizerRoles = optimizerRoles(dir);
        };
        await writeCheckpoint(
          paths.checkpoints,
          {
            step,
            data: { trainSeedCounter: step * config.env.train.reduce((n, e) => n + e.groups, 0) },
            trainer: state as unknown as Record<string, unknown>,
          },
          { config, writeModel, metricsFile: paths.metrics, keep: t.keepCheckpoints },
        );
        checkpointSeconds = (performance.now() - c0) / 1000;
        lastCheckpoint = step;
      }
      if (earlyStop) break;
    }
  } catch (err) {
    opened.consoleLog.append(`${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`); // the CLI prints it after the log closes
    opened.consoleLog.close();
    throw err;
  } finally {
    try {
      await logger.close(); // W&B waits for its upload here
    } finally {
      await ahead?.close();
      await groups?.close();
      await gateway?.close();
      stopOnSignal();
      if (!options.models) engine.dispose();
    }
  }
  // the ids metrics use (a `remote:` tag's is `<EnvId>@host:port`; an agent entry's is its name)
  const tags = config.env.val.map((v, i) => (v.tag !== undefined ? resolveEnvId(v.tag) : entryTags(config, 'val')[i]!));
  const summary: SummaryRow[] = [...new Set(tags)].map((tag) => ({
    tag,
    ...(valBefore?.[tag] !== undefined ? { before: valBefore[tag] } : {}),
    ...(lastVal?.[tag] !== undefined ? { after: lastVal[tag] } : {}),
  }));
  const summaryText = summaryTable(summary);
  opened.consoleLog.append(`Validation success:\n${summaryText}\n`);
  opened.consoleLog.close();
  return { runDir: paths.root, config, startStep, lastStep, earlyStop, summary, summaryText };
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

/**
 * The step's output; a remote env lost mid-step (its server died, timed out) fails the step with that sentence plus
 * what is safe: nothing of the step was written (no metrics line, rollouts or checkpoint), and `--resume` continues
 * exactly from the last checkpoint once the server is back. Non-finite logits in the step's rollout are named with the
 * step the same way.
 */
async function stepOrExplain<T>(pending: Promise<T>, step: number, lastCheckpoint: number, runDir: string): Promise<T> {
  try {
    return await pending;
  } catch (err) {
    if (err instanceof NonFiniteLogitsError) {
      // Nothing is trained on NaN: the step stops at its rollout, and the message says which step.
      err.message = `step ${step} failed: ${err.message} Nothing of step ${step} was saved (${lastCheckpoint > 0 ? `the last checkpoint is step-${lastCheckpoint}` : 'no checkpoint was written yet'}).`;
      throw err;
    }
    if (!(err instanceof RemoteEnvError)) throw err;
    const from =
      lastCheckpoint > 0
        ? `after step ${lastCheckpoint}, its last checkpoint`
        : 'from the start (no checkpoint was written yet)';
    throw new RemoteEnvError(
      err.code,
      `step ${step} failed: ${err.message.replace(/ reset\(\) opens a new session\.$/, '')} Nothing of step ${step} was saved; once the server is back, \`ragen train --resume ${runDir}\` continues ${from}.`,
    );
  }
}
