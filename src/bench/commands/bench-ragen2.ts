// `ragen bench ragen2`: RAGEN-2's comparison on our own runs (issue #18): PPO and GRPO on SimpleSokoban, without the
// rollout filter and with top-p 0.9, over training seeds; resumable across sessions. Then (or alone, --report-only)
// the summary as JSON and markdown and the figures as PNG, from whatever runs exist.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative, sep } from 'node:path';
import type { Command } from 'commander';
import {
  runStudy,
  STUDY_CONFIGS,
  STUDY_OVERRIDES,
  STUDY_SEEDS,
  studyConfigs,
  studyFigures,
  studyMarkdown,
  summarizeStudy,
  writePngs,
} from '../study/index.js';
import { UsageError } from '../../util/index.js';
import { checkFlagOverrides } from '../../config/index.js';

interface Ragen2Options {
  configs?: string;
  seeds?: string;
  runsDir: string;
  outDir: string;
  reportOnly?: boolean;
  drop: number;
}

/** `--seeds 10000,20000` as integers. */
export function parseSeeds(list: string | undefined): number[] {
  if (list === undefined) return STUDY_SEEDS;
  const seeds = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const bad = seeds.filter((s) => !/^-?\d+$/.test(s));
  if (seeds.length === 0 || bad.length)
    throw new UsageError(`--seeds takes comma-separated integers (e.g. 10000,20000,30000); got \`${list}\`.`);
  return seeds.map(Number);
}

function parseDrop(v: string): number {
  const x = Number(v);
  if (!(x > 0 && x < 1))
    throw new UsageError(`--drop is a success fraction in (0, 1), e.g. 0.1 for 10 points; got \`${v}\`.`);
  return x;
}

/**
 * Summarise the runs under `runsDir`, write summary.json, summary.md and the PNGs into `outDir`; returns the markdown.
 */
export async function ragen2Report(
  runsDir: string,
  outDir: string,
  drop: number,
  order: string[],
  command: string,
): Promise<string> {
  const summary = summarizeStudy(runsDir, { drop, order });
  const meta = `Date ${new Date().toISOString().slice(0, 10)}. ${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}, Node ${process.version}, 1-minute load average ${os.loadavg()[0]!.toFixed(2)} when the report was made (the machine is shared: step times are noisy, success numbers are not).`;
  // Figure links relative to docs/, where the section is pasted (docs/benchmarks.md).
  const md = studyMarkdown(summary, meta, command, relative('docs', outDir).split(sep).join('/'));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(join(outDir, 'summary.md'), `${md}\n`);
  const files = await writePngs(studyFigures(summary), outDir);
  console.error(`report: ${join(outDir, 'summary.md')}, ${join(outDir, 'summary.json')}, ${files.join(', ')}`);
  return md;
}

export function register(bench: Command): void {
  bench
    .command('ragen2')
    .description(
      'RAGEN-2 on our own runs: PPO and GRPO on SimpleSokoban, with and without the top-p 0.9 filter, over training seeds (resumable); then the summary (JSON + markdown) and PNG figures of success, Î(X;Z), Ĥ(Z|X) and the regime picture.',
    )
    .argument(
      '[overrides...]',
      `config overrides for new runs, after the study's own (${STUDY_OVERRIDES.join(' ')}), e.g. trainer.steps=2`,
    )
    .option(
      '--configs <list>',
      `comma-separated configs: ${STUDY_CONFIGS.map((c) => c.name).join(', ')} (default: all), or presets joined by +`,
    )
    .option('--seeds <list>', `training seeds (seed.train), run in this order [${STUDY_SEEDS.join(',')}]`)
    .option(
      '--runs-dir <dir>',
      'parent of the run directories (<config>__seed<N>); finished runs there are skipped, interrupted ones resumed',
      'runs/ragen2',
    )
    .option(
      '--out-dir <dir>',
      'where summary.json, summary.md and the PNG figures go (rewritten after every run)',
      'docs/ragen2',
    )
    .option('--report-only', 'train nothing: summarise the runs under --runs-dir as they are and draw the figures')
    .option(
      '--drop <fraction>',
      'a validation this far below the best earlier one counts as "success fell"',
      parseDrop,
      0.1,
    )
    .addHelpText(
      'after',
      [
        '',
        'Each run takes 10-15 minutes on 2 idle cores (60 steps); 4 configs x 3 seeds is hours. Interrupt it any time and run',
        'the same command again: it skips finished runs and resumes the interrupted one from its last checkpoint with the',
        'config saved in it (overrides apply to runs not yet started).',
        '',
        'Examples:',
        '  $ ragen bench ragen2 --runs-dir /work/ragen2-runs --seeds 10000 --out-dir /work/ragen2-runs/report',
        '  $ ragen bench ragen2 --report-only --runs-dir /work/ragen2-runs        # refresh docs/ragen2 from what finished',
        '  $ ragen bench ragen2 --runs-dir /tmp/tiny --seeds 1 trainer.steps=2 env.val.0.groups=4   # a smoke test',
      ].join('\n'),
    )
    .action(async (overrides: string[], opts: Ragen2Options) => {
      const configs = studyConfigs(opts.configs);
      const seeds = parseSeeds(opts.seeds);
      const command = `ragen bench ragen2 --report-only --runs-dir ${opts.runsDir}`;
      const report = () =>
        ragen2Report(
          opts.runsDir,
          opts.outDir,
          opts.drop,
          configs.map((c) => c.name),
          command,
        );
      if (overrides.length && opts.reportOnly)
        throw new UsageError(
          `--report-only trains nothing, so overrides mean nothing to it; drop \`${overrides.join(' ')}\`.`,
        );
      checkFlagOverrides(
        [
          { flag: '--seeds', key: 'seed.train' },
          { flag: '--runs-dir', key: 'logging.runDir' },
        ],
        overrides,
      );
      let last: string | null = null; // the report made after the last run trained, if any
      if (!opts.reportOnly)
        await runStudy({
          runsDir: opts.runsDir,
          configs,
          seeds,
          overrides,
          afterRun: async () => void (last = await report()),
        });
      console.log(`\n${last ?? (await report())}`);
    });
}
