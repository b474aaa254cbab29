// Probing a checkpoint's gradients alone (RAGEN's `gradient_analysis_only`): load a run's checkpoint, roll out one
// training batch as its next step would, and run the gradient analysis on it without any update.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EnvGroups } from '../agent/index.js';
import { agentEntries, envGroupsOptions, loadSavedConfig, tagEntries, type RagenConfig } from '../config/index.js';
import { openGateway } from './agent-source.js';
import { runPaths } from '../metrics/index.js';
import { CheckpointError } from '../util/index.js';
import type { VerifyCheckpointOptions } from '../metrics/index.js';
import {
  checkpointDirs,
  listCheckpoints,
  readCheckpoint,
  type CheckpointRef,
  type CheckpointState,
} from './checkpoint-io.js';
import { openModelDir, openNewest } from './checkpoint-read.js';
import { openModels } from './engine-setup.js';
import { analyzeStep, type GradBucket } from './grad-analysis.js';
import { collectRollout, filterBatch, prepareKept } from './step.js';
import { openTeacher } from './teacher.js';
import { stepSettings } from './step-batch.js';

/** What to probe. */
export interface ProbeOptions {
  /** A run directory (it holds config.yaml and checkpoints/step-N/). */
  run: string;
  /** The checkpoint's step; 0 = the run's initial model (`model.path`); default: the latest complete checkpoint. */
  step?: number;
  /** Dotted config overrides on the saved config (e.g. `trainer.gradAnalysis.buckets=4`, `env.train=[...]`). */
  overrides?: readonly string[];
  /** Progress lines (stage by stage). */
  onProgress?: (line: string) => void;
  /**
   * Accept a checkpoint whose manifest has no SHA-256 digests, checked by size only (`--allow-unverified-checkpoint`).
   * @default false
   */
  allowUnverifiedCheckpoint?: boolean;
}

/** The probe's result (also its JSON file). */
export interface ProbeReport {
  run: string;
  /** The model probed: a checkpoint directory, or the initial model's path for step 0. */
  model: string;
  step: number;
  /** The rollout is the one training step `step + 1` would sample (its env seeds and sampler seed). */
  rolloutStep: number;
  buckets: number;
  episodes: number;
  groups: number;
  keptGroups: number;
  /** Mean in-group reward std before filtering (`rollout/in_group_reward_std`). */
  inGroupRewardStd: number;
  filtered: GradBucket[];
  prefilter: GradBucket[] | null;
  seconds: number;
}

/**
 * The checkpoint of `step` in `run` (the newest when undefined: named when damaged, never skipped) with its trainer
 * state, verified against its manifest first; or the initial model (step 0, `dir` null).
 */
function resolveCheckpoint(
  run: string,
  step: number | undefined,
  opts: VerifyCheckpointOptions,
): { step: number; dir: string | null; state: CheckpointState | null } {
  const paths = runPaths(run);
  if (!existsSync(paths.config))
    throw new CheckpointError(
      `\`${run}\` is not a run directory (no config.yaml); give the folder \`ragen train\` wrote, e.g. runs/<name>.`,
    );
  if (step === 0) return { step: 0, dir: null, state: null };
  const all = checkpointDirs(paths.checkpoints);
  if (step === undefined) {
    const newest = all.at(-1);
    if (!newest)
      throw new CheckpointError(
        `\`${run}\` has no checkpoint under checkpoints/; probe its initial model with --step 0.`,
      );
    const wayOut = (older: CheckpointRef | undefined) =>
      `${older ? `probe the step before it with --step ${older.step}, or` : 'probe the initial model with --step 0, or'} delete \`${newest.dir}\``;
    return {
      step: newest.step,
      dir: newest.dir,
      state: openNewest(run, newest, wayOut, () => readCheckpoint(newest.dir, opts)),
    };
  }
  const dir = join(paths.checkpoints, `step-${step}`);
  if (!all.some((c) => c.step === step)) {
    const have =
      listCheckpoints(paths.checkpoints)
        .map((c) => c.step)
        .join(', ') || 'none';
    throw new CheckpointError(
      `\`${run}\` has no complete checkpoint for step ${step} (complete checkpoints: ${have}); give one of them, or --step 0 for the initial model.`,
    );
  }
  return { step, dir, state: readCheckpoint(dir, opts) };
}

/**
 * Load the checkpoint, roll out one batch, and analyse its gradients by reward-std bucket (filtered and unfiltered).
 */
export async function probeGradients(o: ProbeOptions): Promise<ProbeReport> {
  const t0 = performance.now();
  const say = o.onProgress ?? (() => {});
  const verify = { allowUnverified: o.allowUnverifiedCheckpoint === true };
  const { step, dir, state } = resolveCheckpoint(o.run, o.step, verify);
  // The probe always reports the unfiltered view too: it is what a checkpoint probe is for.
  const config: RagenConfig = loadSavedConfig(dir ?? o.run, [
    ...(o.overrides ?? []),
    'trainer.gradAnalysis.prefilter=true',
  ]);
  say(`loading ${dir ?? config.model.path}`);
  if (!dir) openModelDir(config.model.path, verify); // the initial model may be another run's checkpoint: verified too
  const { engine, tokenizer } = dir ? await openModels(config, dir) : await openModels(config);
  try {
    const groups = tagEntries(config, 'train').length > 0 ? new EnvGroups(envGroupsOptions(config, 'train')) : null;
    const rolloutStep = step + 1;
    say(`rolling out ${config.env.train.reduce((n, e) => n + e.groups, 0)} groups (the batch of step ${rolloutStep})`);
    // The trainer's own sequence (step.ts): the step's rollout, the filter, the kept rows' update data.
    const gateway =
      agentEntries(config, 'train').length > 0 ? await openGateway(config, engine, tokenizer, 'train') : undefined;
    let batch;
    try {
      ({ batch } = await collectRollout(
        { config, engine, tokenizer, agent: config.agent, groups, ...(gateway ? { gateway } : {}) },
        rolloutStep,
      ));
    } finally {
      await groups?.close();
      await gateway?.close();
    }
    const f = await filterBatch(engine, config, batch, tokenizer.padTokenId);
    // The KL coefficient the run had reached (the adaptive controller's), else the configured one.
    const saved = state?.trainer?.klCoef;
    const klBeta = typeof saved === 'number' ? saved : config.algo.kl.coef;
    const settings = stepSettings(config);
    // A distilling run's advantages include the teacher's term: the probe opens the same teacher.
    const teacher = (await openTeacher(config, tokenizer, { say })) ?? undefined;
    let data;
    try {
      data = (await prepareKept(engine, settings, f, { klBeta, ...(teacher ? { teacher } : {}) }))?.data ?? null;
    } finally {
      teacher?.dispose();
    }
    say(
      `analysing ${config.trainer.gradAnalysis.buckets} buckets (${f.filter.stats.keptCount} of ${f.filter.groupKeys.length} groups kept by the filter)`,
    );
    const a = await analyzeStep(engine, settings, { ...f, data, klBeta });
    return {
      run: o.run,
      model: dir ?? config.model.path,
      step,
      rolloutStep,
      buckets: config.trainer.gradAnalysis.buckets,
      episodes: batch.episodes.length,
      groups: f.filter.groupKeys.length,
      keptGroups: f.filter.stats.keptCount,
      inGroupRewardStd: f.filter.stats.reward.std,
      filtered: a.filtered,
      prefilter: a.prefilter,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    engine.dispose();
  }
}

const fmt = (x: number): string =>
  x === 0 ? '0' : Math.abs(x) >= 1e-3 && Math.abs(x) < 1e4 ? x.toFixed(4) : x.toExponential(2);

/** The report as text tables: one row per bucket, filtered then unfiltered. */
export function formatProbe(r: ProbeReport): string {
  const head = [
    'bucket',
    'groups',
    'samples',
    'tokens',
    'std min..max',
    'task',
    'entropy',
    'kl',
    'task/token',
    'loss task',
  ];
  const table = (title: string, bs: readonly GradBucket[]): string => {
    if (bs.length === 0) return `${title}: no rows (the filter kept nothing)`;
    const rows = bs.map((b) => [
      b.name,
      String(b.groups),
      String(b.samples),
      String(b.tokens),
      `${fmt(b.rewardStd.min)}..${fmt(b.rewardStd.max)}`,
      fmt(b.norm.task),
      fmt(b.norm.entropy),
      fmt(b.norm.kl),
      fmt(b.tokens > 0 ? b.norm.task / b.tokens : 0),
      fmt(b.loss.task),
    ]);
    const width = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
    const line = (cells: string[]) =>
      cells.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join('  ');
    return [title, line(head), ...rows.map(line)].join('\n');
  };
  return [
    `gradient norms of ${r.model} (step ${r.step}) on the batch of step ${r.rolloutStep}: ${r.episodes} episodes in ${r.groups} groups, ${r.keptGroups} kept by the filter; mean in-group reward std ${fmt(r.inGroupRewardStd)}`,
    '',
    table('after the filter (what the update trains on):', r.filtered),
    '',
    table('before the filter (every group):', r.prefilter ?? []),
  ].join('\n');
}
