// `ragen train`: StarPO training from a preset (default `sokoban-ppo`) with `dotted.key=value` overrides, or the
// continuation of an interrupted run (`--resume <runDir>`); a progress bar while it runs, a summary table at the end.
import type { Command } from 'commander';
import {
  checkFlagOverrides,
  configToYaml,
  DEFAULT_PRESET,
  listPresets,
  loadConfig,
  type RagenConfig,
} from '../../config/index.js';
import { train } from '../../train/index.js';
import { parsePositiveInt, UsageError } from '../../util/index.js';

/** Options of `ragen train`, as commander parses them. */
export interface TrainCliOptions {
  config?: string[];
  resume?: string;
  steps?: number;
  stopAfter?: number;
  printConfig?: boolean;
  freshOptimizer?: boolean;
  allowUnverifiedCheckpoint?: boolean;
}

const EXAMPLES = `
Overrides are dotted config keys (docs/config.md), applied after the presets in order.

Examples:
  $ ragen train                                            # the default preset: ${DEFAULT_PRESET}
  $ ragen train --config frozenlake-ppo
  $ ragen train --config sokoban-ppo --config filter/top-p-0.9 trainer.steps=200
  $ ragen train algo.advEstimator=grpo algo.lossAgg=seq-mean-token-mean model.lora.rank=8
  $ ragen train --steps 20 trainer.valEvery=5 logging.runDir=runs/try
  $ ragen train --resume runs/SimpleSokoban__gae__10000__20250101-120000   # continue from its latest checkpoint
  $ ragen train --print-config --config bandit-ppo                          # the resolved config, then exit`;

export function register(program: Command): void {
  program
    .command('train')
    .description('Train an agent with StarPO (PPO, GRPO, ...) on environments; writes a run directory under runs/.')
    .argument('[overrides...]', 'config overrides, e.g. trainer.steps=50 algo.filter.value=0.9')
    .option(
      '-c, --config <preset>',
      `a preset (see configs/) or YAML file; repeat to merge several in order [${DEFAULT_PRESET}]`,
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option(
      '--resume <runDir>',
      'continue an interrupted run from its latest complete checkpoint (overrides apply to its saved config)',
    )
    .option('--steps <n>', 'total training steps (trainer.steps)', parsePositiveInt('--steps'))
    .option(
      '--stop-after <k>',
      'stop after step k with a checkpoint, resumable with --resume (the schedule still counts --steps)',
      parsePositiveInt('--stop-after'),
    )
    .option('--print-config', 'print the resolved config as YAML and exit')
    .option(
      '--fresh-optimizer',
      'with --resume: continue from a checkpoint whose optimizer state is missing, with fresh AdamW moments (warns; the run then differs from an uninterrupted one)',
    )
    .option(
      '--allow-unverified-checkpoint',
      'accept a checkpoint (the one --resume continues, or a model.path that is one) whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)',
    )
    .addHelpText('after', EXAMPLES)
    .action(async (overrides: string[], opts: TrainCliOptions) => {
      await runTrain(overrides, opts);
    });
}

/** Resolve the config (a fresh run) or the resume request, train, and print the summary table. */
export async function runTrain(overrides: readonly string[], opts: TrainCliOptions): Promise<void> {
  const all = [...overrides, ...(opts.steps !== undefined ? [`trainer.steps=${opts.steps}`] : [])];
  checkFlagOverrides(
    opts.steps !== undefined ? [{ flag: '--steps', key: 'trainer.steps', value: opts.steps }] : [],
    overrides,
  );
  if (opts.resume !== undefined && opts.config)
    throw new UsageError(
      'Give --resume or --config, not both: a resumed run keeps its saved config (add key=value overrides to change it).',
    );
  for (const o of overrides) {
    if (!o.includes('='))
      throw new UsageError(
        `Bad argument \`${o}\`: overrides are key=value (e.g. trainer.steps=50); presets go after --config.${listPresets().includes(o) ? ` Did you mean \`--config ${o}\`?` : ''}`,
      );
  }
  let config: RagenConfig | undefined;
  if (opts.resume === undefined) {
    config = loadConfig({
      config: opts.config && opts.config.length > 0 ? opts.config : DEFAULT_PRESET,
      overrides: all,
    });
    if (opts.printConfig) {
      process.stdout.write(configToYaml(config));
      return;
    }
  } else if (opts.printConfig)
    throw new UsageError("--print-config shows a fresh run's config; a resumed run's is <runDir>/config.yaml.");
  if (opts.freshOptimizer && opts.resume === undefined)
    throw new UsageError('--fresh-optimizer only applies with --resume <runDir>.');
  const result = await train({
    ...(config ? { config } : { resume: opts.resume!, overrides: all }),
    ...(opts.stopAfter !== undefined ? { stopAfter: opts.stopAfter } : {}),
    ...(opts.freshOptimizer ? { freshOptimizer: true } : {}),
    ...(opts.allowUnverifiedCheckpoint ? { allowUnverifiedCheckpoint: true } : {}),
  });
  const stopped = result.earlyStop
    ? ` (early stop: ${result.earlyStop.reason})`
    : result.lastStep < result.config.trainer.steps
      ? ` (stopped; continue with \`ragen train --resume ${result.runDir}\`)`
      : '';
  console.log(
    `\nTrained steps ${result.startStep + 1}-${result.lastStep} of ${result.config.trainer.steps}${stopped}. Run: ${result.runDir}`,
  );
  console.log(`Validation success:\n${result.summaryText}`);
}
