// The subcommands, in the order `ragen --help` lists them. Each module exports `register(program)`.
import type { Command } from 'commander';
import * as envs from './envs.js';
import * as envServe from './env-serve.js';
import * as play from './play.js';
import * as solve from './solve.js';
import * as bench from '../../bench/commands/index.js';
import * as retrieval from './retrieval.js';
import * as evalCmd from './eval.js';
import * as trainCmd from './train.js';
import * as sft from './sft.js';
import * as serve from './serve.js';
import * as dashboard from './dashboard.js';
import * as probeGrads from './probe-grads.js';
import * as modelInit from './model-init.js';
import * as push from './push.js';
import * as leaderboard from './leaderboard.js';
import * as newCmd from './new.js';

export const commands: ((program: Command) => void)[] = [
  trainCmd.register,
  envs.register,
  envServe.register,
  play.register,
  solve.register,
  bench.register,
  evalCmd.register,
  sft.register,
  serve.register,
  retrieval.register,
  dashboard.register,
  probeGrads.register,
  modelInit.register,
  push.register,
  leaderboard.register,
  newCmd.register,
];
