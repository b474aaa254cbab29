// The RAGEN-2 study's runs (issue #18): PPO and GRPO on SimpleSokoban, each without the rollout filter and with
// RAGEN-2's top-p 0.9, over several training seeds. Each run has a fixed directory `<runs-dir>/<config>__seed<N>`,
// so the study resumes: finished runs are skipped, interrupted ones continue from their latest checkpoint.
import { existsSync, readdirSync, rmSync, writeFileSync, readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkRunConfig, listPresets, loadConfig, type RagenConfig } from '../../config/index.js';
import { summarize as summarizeRun } from '../../metrics/index.js';
import { train } from '../../train/index.js';
import { ConfigError, didYouMean, RagenError, UsageError } from '../../util/index.js';

/** One configuration of the study: a short name (the run directories' prefix) and the presets merged for it. */
export interface StudyConfig {
  name: string;
  presets: string[];
}

/** The four configurations RAGEN-2 compares: {PPO, GRPO} x {no filter, top-p 0.9} (sokoban-ppo carries the filter). */
export const STUDY_CONFIGS: StudyConfig[] = [
  { name: 'ppo-nofilter', presets: ['sokoban-ppo', 'filter/none'] },
  { name: 'ppo-topp0.9', presets: ['sokoban-ppo'] },
  { name: 'grpo-nofilter', presets: ['sokoban-grpo', 'filter/none'] },
  { name: 'grpo-topp0.9', presets: ['sokoban-grpo'] },
];

/** The issue's three training seeds (`seed.train`; 10000 is the presets' own). */
export const STUDY_SEEDS = [10000, 20000, 30000];

/**
 * Overrides every study run gets before the user's: plain console lines, and the collapse diagnostics every 2 steps.
 * Why 2: the MI early warning needs 15 diagnostic values (a 10-value baseline and a 5-value window), which 60 steps
 * at every 5 (steps 1, 5, ..., 60: 13 values) never reach; at every 2 it is judged from step 28. Costs ~3 s a step.
 */
export const STUDY_OVERRIDES = ['trainer.collapse.every=2', 'logging.console=plain'];

/** Resolve `--configs`: names of STUDY_CONFIGS, or presets joined by `+` (named after them). */
export function studyConfigs(list: string | undefined): StudyConfig[] {
  if (!list) return STUDY_CONFIGS;
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((name) => {
      const known = STUDY_CONFIGS.find((c) => c.name === name);
      if (known) return known;
      const presets = listPresets();
      for (const part of name.split('+')) {
        if (!presets.includes(part) && !existsSync(part) && !existsSync(`${part}.yaml`)) {
          throw new UsageError(
            `Unknown --configs entry \`${part}\`: neither a study config (${STUDY_CONFIGS.map((c) => c.name).join(', ')}) nor a preset or YAML file.${didYouMean(part, [...STUDY_CONFIGS.map((c) => c.name), ...presets])}`,
          );
        }
      }
      return { name: name.replace(/[^\w.+-]+/g, '-'), presets: name.split('+') };
    });
}

/** The fixed run directory of (config, seed). */
export function studyRunDir(runsDir: string, config: string, seed: number): string {
  return join(runsDir, `${config}__seed${seed}`);
}

/** What a run directory holds: nothing yet, a run to continue from a checkpoint, or a finished run. */
export type StudyRunState = 'absent' | 'unstarted' | 'resumable' | 'finished';

/** Judge a run directory: finished (all steps, or an early stop), resumable (has a checkpoint), or unstarted. */
export function studyRunState(dir: string): StudyRunState {
  if (!existsSync(dir)) return 'absent';
  const s = summarizeRun('study', dir);
  if (s.status === 'finished' || s.status === 'early-stopped') return 'finished';
  const ckpts = join(dir, 'checkpoints');
  const hasCheckpoint = existsSync(ckpts) && readdirSync(ckpts).some((f) => /^step-\d+$/.test(f));
  return hasCheckpoint ? 'resumable' : 'unstarted';
}

/** Options of `runStudy`. */
export interface RunStudyOptions {
  runsDir: string;
  configs: StudyConfig[];
  seeds: number[];
  /** `dotted.key=value` overrides for fresh runs (after STUDY_OVERRIDES); a resumed run keeps its saved config. */
  overrides: readonly string[];
  /** Called after each run (finished, skipped or stopped), e.g. to refresh the report. */
  afterRun?: (dir: string) => Promise<void> | void;
  log?: (line: string) => void;
}

/** The runs in study order: every config on the first seed, then on the next seed, ... */
export function studyPlan(
  runsDir: string,
  configs: StudyConfig[],
  seeds: number[],
): { config: StudyConfig; seed: number; dir: string }[] {
  return seeds.flatMap((seed) =>
    configs.map((config) => ({ config, seed, dir: studyRunDir(runsDir, config.name, seed) })),
  );
}

function freshConfig(c: StudyConfig, seed: number, dir: string, overrides: readonly string[]): RagenConfig {
  return loadConfig({
    config: c.presets,
    overrides: [...STUDY_OVERRIDES, `seed.train=${seed}`, ...overrides, `logging.runDir=${dir}`],
  });
}

/**
 * Train every (config, seed) of the plan that has not finished. Configs are checked first (a missing model fails in
 * seconds); a lock file keeps two studies from training the same directories at once.
 */
export async function runStudy(opts: RunStudyOptions): Promise<void> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const plan = studyPlan(opts.runsDir, opts.configs, opts.seeds);
  const problems: string[] = [];
  for (const p of plan) {
    try {
      checkRunConfig(freshConfig(p.config, p.seed, p.dir, opts.overrides));
    } catch (err) {
      if (!(err instanceof RagenError)) throw err;
      problems.push(`${p.config.name} seed ${p.seed}: ${(err as Error).message}`);
    }
  }
  if (problems.length) throw new ConfigError(`the study cannot start:\n${problems.join('\n')}`);
  mkdirSync(opts.runsDir, { recursive: true });
  const release = lock(opts.runsDir);
  try {
    for (const [i, p] of plan.entries()) {
      const state = studyRunState(p.dir);
      const tag = `[${i + 1}/${plan.length}] ${p.config.name} seed ${p.seed}`;
      if (state === 'finished') {
        log(`${tag}: finished already, skipped (${p.dir})`);
        continue;
      }
      if (state === 'resumable') {
        log(`${tag}: resuming ${p.dir} from its latest checkpoint`);
        await train({ resume: p.dir });
      } else {
        if (state === 'unstarted') {
          log(`${tag}: ${p.dir} stopped before its first checkpoint; starting it again`);
          rmSync(p.dir, { recursive: true });
        } else log(`${tag}: starting ${p.dir}`);
        await train({ config: freshConfig(p.config, p.seed, p.dir, opts.overrides) });
      }
      await opts.afterRun?.(p.dir);
    }
  } finally {
    release();
  }
}

/** Take `<runsDir>/study.lock` (this pid), refusing when a live process holds it; returns the release. */
function lock(runsDir: string): () => void {
  const file = join(runsDir, 'study.lock');
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    let alive = false;
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) {
      try {
        process.kill(pid, 0);
        alive = true;
      } catch {
        alive = false; // no such process: a stale lock from a study that died
      }
    }
    if (alive)
      throw new UsageError(
        `Another study (pid ${pid}) is training in ${runsDir} (${file}). Wait for it, or stop it (kill ${pid}) and run again; it resumes where it stopped.`,
      );
  }
  writeFileSync(file, `${process.pid}\n`);
  return () => rmSync(file, { force: true });
}
