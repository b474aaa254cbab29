// `ragen bench envs`: resets/s and steps/s per environment id, in process or (--remote) over the wire.
import os from 'node:os';
import type { Command } from 'commander';
import { envSpec, listEnvs, resolveEnvId } from '../../env/index.js';
import { benchEnv, type BenchEnvResult } from '../envs.js';
import { parsePositive, parsePositiveInt } from '../../util/index.js';
import { runRemoteBench } from './bench-remote.js';

/** The `--json` output of `ragen bench envs`. */
export interface BenchEnvsReport {
  node: string;
  cpu: string;
  /** 1-minute load average when the run started: other processes on the machine skew the numbers. */
  loadAverage: number;
  seconds: number;
  /** Each id was measured this many times; the best resets/s and the best steps/s are kept. */
  repeat: number;
  results: BenchEnvResult[];
}

export function register(bench: Command): void {
  bench
    .command('envs')
    .description(
      "Resets/s and steps/s per environment id, single-threaded. Steps replay the solver's actions (else random action names); only step() calls are timed.",
    )
    .option(
      '--ids <list>',
      'comma-separated env ids (default: every registered id that needs no outside service; Lean only when named)',
    )
    .option('--seconds <s>', 'wall time of each measurement', parsePositive('--seconds'), 2)
    .option(
      '--repeat <k>',
      'measure each id k times and keep the best (on a busy machine)',
      parsePositiveInt('--repeat'),
      1,
    )
    .option(
      '--remote',
      'load test over the wire instead: `ragen env serve` in a child process on loopback, --sessions concurrent sessions per id, steps/s beside in-process (default ids: SimpleSokoban,Bandit,Countdown)',
    )
    .option('--sessions <n>', 'with --remote: concurrent sessions', parsePositiveInt('--sessions'), 1000)
    .option(
      '--url <ws://host:port>',
      'with --remote: load an already running server instead of starting one (ids it alone serves, e.g. Python bridge envs, are measured without an in-process run)',
    )
    .option(
      '--server-pid <pid>',
      'with --url: the server process, to report its CPU share (Linux)',
      parsePositiveInt('--server-pid'),
    )
    .option('--json', 'print {node, cpu, loadAverage, seconds, repeat, results: [...]} as JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  $ ragen bench envs\n  $ ragen bench envs --ids CoordSokoban --seconds 5\n  $ ragen bench envs --repeat 3 --json > bench.json\n  $ ragen bench envs --remote --sessions 1000 --seconds 5',
    )
    .action(
      async (opts: {
        ids?: string;
        seconds: number;
        repeat: number;
        json?: boolean;
        remote?: boolean;
        sessions: number;
        url?: string;
        serverPid?: number;
      }) => {
        if (opts.remote) return void (await runRemoteBench(opts));
        // Envs that need an outside service (Lean's Kimina server) are measured only when named in --ids.
        const ids = opts.ids
          ? opts.ids.split(',').map((s) => resolveEnvId(s.trim()))
          : listEnvs()
              .filter((e) => !envSpec(e.id).requires)
              .map((e) => e.id);
        const report: BenchEnvsReport = {
          node: process.version,
          cpu: `${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}`,
          loadAverage: os.loadavg()[0]!,
          seconds: opts.seconds,
          repeat: opts.repeat,
          results: [],
        };
        if (!opts.json) {
          console.log(
            `node ${report.node}, ${report.cpu}, load average ${report.loadAverage.toFixed(2)}, ${opts.seconds} s per measurement${opts.repeat > 1 ? `, best of ${opts.repeat}` : ''}`,
          );
          console.log(
            `${'env'.padEnd(26)} ${'resets/s'.padStart(12)} ${'steps/s'.padStart(12)}  actions (mean episode length)`,
          );
        }
        for (const id of ids) {
          let r = await benchEnv(id, { seconds: opts.seconds });
          for (let k = 1; k < opts.repeat; k++) r = best(r, await benchEnv(id, { seconds: opts.seconds }));
          report.results.push(r);
          if (!opts.json)
            console.log(
              `${id.padEnd(26)} ${fmt(r.resetsPerSecond).padStart(12)} ${fmt(r.stepsPerSecond).padStart(12)}  ${r.actions}${r.meanEpisodeLength === null ? '' : ` (${r.meanEpisodeLength.toFixed(1)})`}`,
            );
        }
        if (opts.json) console.log(JSON.stringify(report, null, 2));
      },
    );
}

/** The better resets/s and the better steps/s of two runs (each with its own counts). */
function best(a: BenchEnvResult, b: BenchEnvResult): BenchEnvResult {
  const resets = b.resetsPerSecond > a.resetsPerSecond ? b : a;
  const steps = (b.stepsPerSecond ?? 0) > (a.stepsPerSecond ?? 0) ? b : a;
  return { ...steps, resetsPerSecond: resets.resetsPerSecond, resets: resets.resets };
}

function fmt(x: number | null): string {
  return x === null ? '-' : Math.round(x).toLocaleString('en-US');
}
