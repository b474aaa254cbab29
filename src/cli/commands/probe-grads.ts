// `ragen probe-grads`: RAGEN-2's gradient analysis of one checkpoint, alone: one rollout, then per reward-std bucket
// the gradient norms of the task, entropy and KL terms, printed as a table and written as JSON.
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { loadSavedConfig } from '../../config/index.js';
import { formatProbe, probeGradients, type ProbeReport } from '../../train/index.js';
import { checkCreatable, parsePositiveInt, UsageError, withSetting, writeFileAt } from '../../util/index.js';

/** Options of `ragen probe-grads`, as commander parses them. */
export interface ProbeGradsOptions {
  run: string;
  step?: number;
  buckets?: number;
  groups?: number;
  out?: string;
  json?: boolean;
  allowUnverifiedCheckpoint?: boolean;
}

const EXAMPLES = `
The rollout is the batch the run's next step would sample (same seeds); nothing is trained or written into the
checkpoint. The JSON goes to <run>/grad-probe/step-<N>.json unless --out says otherwise. See docs/training.md,
"Gradient analysis by reward-std bucket".

Examples:
  $ ragen probe-grads --run runs/SimpleSokoban__gae__10000__20250101-120000            # its latest checkpoint
  $ ragen probe-grads --run runs/my-run --step 0 --buckets 4                            # the model it started from
  $ ragen probe-grads --run runs/my-run --step 100 --groups 32 --out probe-100.json --json`;

function parseStep(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new UsageError(
      `Bad --step \`${text}\`: give a checkpoint's step (an integer >= 0; 0 = the run's initial model).`,
    );
  return n;
}

export function register(program: Command): void {
  program
    .command('probe-grads')
    .description(
      "Gradient analysis of a run's checkpoint by reward-std bucket (task / entropy / KL gradient norms), without training.",
    )
    .requiredOption('--run <dir>', 'the run directory')
    .option(
      '--step <n>',
      "the checkpoint's step (checkpoints/step-N); 0 = the initial model [the latest complete checkpoint]",
      parseStep,
    )
    .option(
      '--buckets <k>',
      "reward-std buckets [the run's trainer.gradAnalysis.buckets, 6 by default]",
      parsePositiveInt('--buckets'),
    )
    .option(
      '--groups <n>',
      "groups per training env tag in the probe's rollout [the run's env.train groups]",
      parsePositiveInt('--groups'),
    )
    .option('--out <file.json>', 'where to write the JSON report [<run>/grad-probe/step-<N>.json]')
    .option('--json', 'print the JSON report instead of the table')
    .option(
      '--allow-unverified-checkpoint',
      'accept a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)',
    )
    .addHelpText('after', EXAMPLES)
    .action(async (opts: ProbeGradsOptions) => {
      const report = await runProbe(opts, (line) => process.stderr.write(`probe-grads: ${line}\n`));
      if (opts.json) console.log(JSON.stringify(report, null, 2));
      else console.log(formatProbe(report));
    });
}

/** Run the probe `opts` describe, write its JSON, and return the report. */
export async function runProbe(
  opts: ProbeGradsOptions,
  onProgress?: (line: string) => void,
): Promise<ProbeReport & { file: string }> {
  const overrides: string[] = [];
  if (opts.buckets !== undefined) overrides.push(`trainer.gradAnalysis.buckets=${opts.buckets}`);
  if (opts.groups !== undefined) overrides.push(`env.train=${JSON.stringify(trainTags(opts.run, opts.groups))}`);
  if (opts.out !== undefined) {
    // Checked before the probe's minutes of work; a path under /proc & co. is refused by name, never hangs.
    try {
      checkCreatable(dirname(opts.out), 'create the folder of --out', '--out');
    } catch (err) {
      throw new UsageError(
        `Cannot write --out \`${opts.out}\` (${(withSetting(err, '--out') as Error).message.replace(/\.$/, '')}); give a file path in a writable folder. Nothing was probed.`,
      );
    }
  }
  const report = await probeGradients({
    run: opts.run,
    ...(opts.step !== undefined ? { step: opts.step } : {}),
    overrides,
    ...(onProgress ? { onProgress } : {}),
    ...(opts.allowUnverifiedCheckpoint ? { allowUnverifiedCheckpoint: true } : {}),
  });
  const file = opts.out ?? join(opts.run, 'grad-probe', `step-${report.step}.json`);
  try {
    writeFileAt(
      file,
      `${JSON.stringify(report, null, 2)}\n`,
      'write the report',
      opts.out !== undefined ? '--out' : undefined,
    );
  } catch (err) {
    throw new UsageError(
      `Cannot write the report to \`${file}\` (${(err as Error).message.replace(/\.$/, '')}); give --out a file path in a writable folder.`,
    );
  }
  onProgress?.(`wrote ${file}`);
  return { ...report, file };
}

/** The run's training tags with `groups` groups each (for --groups). */
function trainTags(run: string, groups: number): unknown[] {
  return loadSavedConfig(run).env.train.map((t) => ({ ...t, groups }));
}
