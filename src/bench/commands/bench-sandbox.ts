// `ragen bench sandbox`: programs judged per second by the code sandbox, on DeepCoder's reference solutions
// (each must pass every hidden test: a failure exits 1). `--isolation both` also runs without bubblewrap for its cost.
import os from 'node:os';
import type { Command } from 'commander';
import { benchJudge, type JudgeBenchResult } from '../judge.js';
import { parsePositiveInt, UsageError } from '../../util/index.js';

/** The `--json` output. */
export interface SandboxBenchReport {
  node: string;
  cpu: string;
  loadAverage: number;
  python: string;
  results: JudgeBenchResult[];
}

export function register(bench: Command): void {
  bench
    .command('sandbox')
    .description(
      "Programs judged per second: DeepCoder's reference solutions run in the code sandbox on their hidden tests (all must pass; exit 1 otherwise).",
    )
    .option('--problems <n>', 'how many problems of the generated set to judge', parsePositiveInt('--problems'), 400)
    .option('--parallel <k>', 'programs run at once', parsePositiveInt('--parallel'), 2)
    .option(
      '--isolation <mode>',
      'bwrap (bubblewrap + rlimits + seccomp), none (rlimits + seccomp only), or both (to see what bubblewrap costs)',
      'bwrap',
    )
    .option('--json', 'print {node, cpu, loadAverage, python, results: [...]} as JSON')
    .addHelpText(
      'after',
      '\nNeeds bubblewrap (apt-get install -y bubblewrap) and /usr/bin/python3.\n\nExamples:\n  $ ragen bench sandbox\n  $ ragen bench sandbox --problems 100 --isolation both --json',
    )
    .action(async (opts: { problems: number; parallel: number; isolation: string; json?: boolean }) => {
      const modes =
        opts.isolation === 'both'
          ? (['bwrap', 'none'] as const)
          : opts.isolation === 'bwrap' || opts.isolation === 'none'
            ? ([opts.isolation] as const)
            : undefined;
      if (!modes) throw new UsageError(`Bad --isolation \`${opts.isolation}\`: give bwrap, none or both.`);
      const report: SandboxBenchReport = {
        node: process.version,
        cpu: `${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}`,
        loadAverage: os.loadavg()[0]!,
        python: '/usr/bin/python3',
        results: [],
      };
      if (!opts.json)
        console.log(
          `node ${report.node}, ${report.cpu}, load average ${report.loadAverage.toFixed(2)}; ${opts.problems} reference solutions, ${opts.parallel} at once`,
        );
      for (const isolation of modes) {
        const r = await benchJudge({
          problems: opts.problems,
          parallel: opts.parallel,
          isolation,
          onProgress: (done, total) => {
            if (!opts.json && process.stderr.isTTY && (done % 20 === 0 || done === total))
              process.stderr.write(`\r${isolation}: ${done}/${total}`);
          },
        });
        if (!opts.json && process.stderr.isTTY) process.stderr.write('\n');
        report.results.push(r);
        if (!opts.json) {
          console.log(
            `${isolation.padEnd(6)} ${r.programsPerSecond.toFixed(1)} programs/s, ${Math.round(r.testsPerSecond)} tests/s, ` +
              `p50 ${r.p50Ms.toFixed(0)} ms, p95 ${r.p95Ms.toFixed(0)} ms per program, ${r.programsPassed}/${r.programs} references pass (${r.seconds.toFixed(1)} s)`,
          );
          for (const f of r.failures.slice(0, 10)) console.log(`  FAILED ${f}`);
        }
      }
      if (opts.json) console.log(JSON.stringify(report, null, 2));
      if (report.results.some((r) => r.failures.length > 0)) process.exitCode = 1;
    });
}
