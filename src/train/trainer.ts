// `train`: open the run (open-run.ts), open its session (state, sinks, envs, gateway), run the loop (loop.ts), close
// everything and report validation before and after. `resume` continues a run from its latest checkpoint so that the
// metrics of the remaining steps equal an uninterrupted run's (every piece of state is in RunState, run-state.ts).
import { EnvGroups } from '../agent/index.js';
import { KLController } from '../algo/index.js';
import { MetricLogger, openRunSinks, summaryTable, type RunSinks, type SummaryRow } from '../metrics/index.js';
import { resolveEnvId } from '../env/index.js';
import { agentEntries, entryTags, envGroupsOptions, tagEntries, type RagenConfig } from '../config/index.js';
import { openGateway } from './agent-source.js';
import { EarlyStopTracker, type EarlyStop } from './early-stop.js';
import { EarlyWarningMonitor } from './early-warning-step.js';
import { abandonRun } from './run-setup.js';
import type { StepContext } from './step.js';
import { AsyncRollouts } from './async-rollouts.js';
import { sayOnInterrupt } from './interrupt.js';
import { openRun, type OpenedRun, type TrainOptions } from './open-run.js';
import { RunState } from './run-state.js';
import { openTeacher } from './teacher.js';
import { trainLoop, type Session } from './loop.js';

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

/** Train (or continue training) a policy with StarPO; see TrainOptions. */
export async function train(options: TrainOptions): Promise<TrainResult> {
  const run = await openRun(options);
  const { config, paths, startStep } = run;
  const { engine, tokenizer } = run.models;
  const groups = tagEntries(config, 'train').length > 0 ? new EnvGroups(envGroupsOptions(config, 'train')) : null;
  const ctx: StepContext = {
    config,
    engine,
    tokenizer,
    agent: config.agent,
    groups,
    kl: klController(config),
    collapseEma: {},
  };
  let opened: RunSinks;
  let gateway;
  try {
    opened = await openRunSinks({
      paths,
      sinks: config.logging.sinks,
      wandb: config.logging.wandb,
      config,
      console: config.logging.console,
      totalSteps: config.trainer.steps,
      startStep,
      ...(options.stream ? { stream: options.stream } : {}),
    });
    // The distillation teacher (algo.distill.teacher), its tokenizer checked against the student's.
    const teacher = await openTeacher(config, tokenizer, { say: (line) => opened.consoleLog.append(`${line}\n`) });
    if (teacher) ctx.teacher = teacher;
    // One gateway for the run's agent entries (closed below; a signal exits through the runner's exit hook).
    if (agentEntries(config, 'train').length > 0)
      gateway = ctx.gateway = await openGateway(config, engine, tokenizer, 'train', (line) =>
        opened.consoleLog.append(`gateway: ${line}\n`),
      );
  } catch (err) {
    await groups?.close();
    ctx.teacher?.dispose();
    if (run.ownsModels) engine.dispose();
    // A fresh run that never took a step must not block its own retry ("already holds a run", then "no checkpoint").
    if (options.resume === undefined && err instanceof Error)
      err.message = `${err.message.replace(/\.?$/, '.')} ${abandonRun(paths)}`;
    throw err;
  }
  const s = openSession(run, ctx, opened, options);
  // Ctrl-C says what was kept and how to continue; with agent programs it exits through process.exit, whose hook kills
  // them
  const stopOnSignal = sayOnInterrupt(
    {
      runDir: paths.root,
      checkpoints: paths.checkpoints,
      totalSteps: config.trainer.steps,
      startStep,
      step: () => s.current,
    },
    { exit: gateway !== undefined },
  );
  let result: { lastStep: number; earlyStop: EarlyStop | null };
  try {
    result = await trainLoop(s);
  } catch (err) {
    opened.consoleLog.append(`${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`); // the CLI prints it after the log closes
    opened.consoleLog.close();
    throw err;
  } finally {
    try {
      await s.logger.close(); // W&B waits for its upload here
    } finally {
      await s.ahead?.close();
      await groups?.close();
      await gateway?.close();
      ctx.teacher?.dispose();
      stopOnSignal();
      if (run.ownsModels) engine.dispose();
    }
  }
  // the ids metrics use (a `remote:` tag's is `<EnvId>@host:port`; an agent entry's is its name)
  const tags = config.env.val.map((v, i) => (v.tag !== undefined ? resolveEnvId(v.tag) : entryTags(config, 'val')[i]!));
  const summary: SummaryRow[] = [...new Set(tags)].map((tag) => ({
    tag,
    ...(s.val.before?.[tag] !== undefined ? { before: s.val.before[tag] } : {}),
    ...(s.val.last?.[tag] !== undefined ? { after: s.val.last[tag] } : {}),
  }));
  const summaryText = summaryTable(summary);
  opened.consoleLog.append(`Validation success:\n${summaryText}\n`);
  opened.consoleLog.close();
  return { runDir: paths.root, config, startStep, ...result, summary, summaryText };
}

/** The KL controller of `algo.kl` (fixed or adaptive β of the in-reward penalty). */
function klController(config: RagenConfig): KLController {
  const kl = config.algo.kl;
  return new KLController(
    kl.controller.type === 'fixed'
      ? { type: 'fixed', klCoef: kl.coef }
      : { type: 'adaptive', klCoef: kl.coef, targetKl: kl.controller.target, horizon: kl.controller.horizon },
  );
}

/**
 * The session of an opened run: the logger over its sinks, the early-stop and early-warning trackers, async rollouts,
 * and the RunState every checkpointed piece is registered with (restored from a resumed checkpoint here, once).
 */
function openSession(run: OpenedRun, ctx: StepContext, opened: RunSinks, options: TrainOptions): Session {
  const { config, startStep } = run;
  const t = config.trainer;
  const logger = new MetricLogger([...opened.sinks, ...(options.sinks ?? [])], { every: config.logging.logEvery });
  ctx.log = (line) => logger.message(line);
  const tracker = new EarlyStopTracker(t.earlyStop);
  const warnings = new EarlyWarningMonitor();
  const val: Session['val'] = { before: null, last: null };
  const state = new RunState()
    .register('klCoef', { get: () => ctx.kl.value, set: (v: number) => (ctx.kl.value = v) })
    .register('collapseEma', {
      get: () => ctx.collapseEma,
      set: (v: StepContext['collapseEma']) => (ctx.collapseEma = v),
    })
    .register('earlyStop', { get: () => tracker.state, set: (v: EarlyStopTracker['state']) => (tracker.state = v) })
    .register('earlyWarning', {
      get: () => warnings.state,
      set: (v: EarlyWarningMonitor['state']) => (warnings.state = v),
    })
    .register('logger', {
      get: () => logger.getState(),
      set: (v: ReturnType<MetricLogger['getState']>) => logger.setState(v),
    })
    .register('valBefore', { get: () => val.before, set: (v: Session['val']['before']) => (val.before = v) })
    .register('lastVal', { get: () => val.last, set: (v: Session['val']['last']) => (val.last = v) });
  state.restore(run.saved);
  const end = Math.min(t.steps, options.stopAfter ?? Infinity);
  const ahead = t.async.enabled
    ? new AsyncRollouts(ctx, {
        maxStaleness: t.async.maxStaleness,
        importanceCap: t.async.importanceCap,
        startStep,
        endStep: end,
      })
    : null;
  logger.message(`${startStep > 0 ? `resuming after step ${startStep}` : 'run'}: ${run.paths.root}`);
  for (const note of opened.notes) logger.message(note);
  const describe = ctx.engine.describe?.(); // engines that say what runs them (TrainableEngine.describe)
  if (describe !== undefined) logger.message(describe);
  if (ahead)
    logger.message(
      `async rollouts: up to ${t.async.maxStaleness} step(s) ahead, importance weights capped at ${t.async.importanceCap}`,
    );
  if (run.lost !== null)
    logger.message(
      `warning: the checkpoint has no ${run.lost}; AdamW starts from fresh moments there, so this run will differ from an uninterrupted one`,
    );
  return {
    config,
    paths: run.paths,
    startStep,
    end,
    current: startStep,
    ctx,
    ahead,
    logger,
    tracker,
    warnings,
    val,
    state,
  };
}
