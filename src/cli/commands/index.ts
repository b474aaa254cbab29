// The subcommands, in the order `ragen --help` lists them. Each module exports `register(program)`.
import type { Command } from 'commander';
import * as envs from './envs.js';
import * as envServe from './env-serve.js';
import * as play from './play.js';
import * as solve from './solve.js';
import * as bench from '../../bench/commands/bench.js';
import '../../bench/commands/bench-engine.js'; // adds `ragen bench engine`
import '../../bench/commands/bench-learning.js'; // adds `ragen bench learning`
import '../../bench/commands/bench-retrieval.js'; // adds `ragen bench retrieval`
import '../../bench/commands/bench-sandbox.js'; // adds `ragen bench sandbox`
import '../../bench/commands/bench-serve.js'; // adds `ragen bench serve`
import '../../bench/commands/bench-gpu.js'; // adds `ragen bench gpu`
import '../../bench/commands/bench-ragen2.js'; // adds `ragen bench ragen2`
import * as retrieval from './retrieval.js';
import * as evalCmd from './eval.js';
import * as trainCmd from './train.js';
import * as sft from './sft.js';
import * as serve from './serve.js';
import * as dashboard from './dashboard.js';
import * as probeGrads from './probe-grads.js';

export const commands: ((program: Command) => void)[] = [trainCmd.register, envs.register, envServe.register, play.register, solve.register, bench.register, evalCmd.register, sft.register, serve.register, retrieval.register, dashboard.register, probeGrads.register];
