// `ragen bench`: the lab's command group. Every subcommand is in BENCH_SUBCOMMANDS below, in the order
// `ragen bench --help` lists them; each module exports `register(bench)`. The CLI imports only this file.
import type { Command } from 'commander';
import * as engine from './bench-engine.js';
import * as envs from './bench-envs.js';
import * as gpu from './bench-gpu.js';
import * as learning from './bench-learning.js';
import * as ragen2 from './bench-ragen2.js';
import * as retrieval from './bench-retrieval.js';
import * as sandbox from './bench-sandbox.js';
import * as serve from './bench-serve.js';

export const BENCH_SUBCOMMANDS: ((bench: Command) => void)[] = [
  envs.register,
  engine.register,
  learning.register,
  retrieval.register,
  sandbox.register,
  serve.register,
  gpu.register,
  ragen2.register,
];

/** Add `ragen bench` and its subcommands to the program. */
export function register(program: Command, subcommands = BENCH_SUBCOMMANDS): void {
  const bench = program
    .command('bench')
    .description('Benchmarks (each prints what it measured, with the machine).')
    .addHelpText(
      'after',
      '\nExamples:\n  $ ragen bench envs\n  $ ragen bench envs --ids CoordSokoban,Bandit --seconds 1 --json',
    );
  for (const add of subcommands) add(bench);
}
