// `ragen solve`: the solver's action sequence for a seed, checked by stepping the env through it.
import type { Command } from 'commander';
import { envSpec, listEnvs, makeEnv, resolveEnvConfig, resolveEnvId, type EnvMode } from '../../env/index.js';
import { UsageError } from '../../util/index.js';
import { addEpisodeOptions, parseConfigPairs } from './env-options.js';

/** The `--json` output of `ragen solve`. */
export interface SolveRecord {
  envId: string;
  seed: number;
  actions: string[];
  solved: true;
  return: number;
}

const EXAMPLES = `
Examples:
  $ ragen solve SimpleSokoban --seed 3
  $ ragen solve Bandit --seed 0 --json
  $ ragen solve MetamathQA --seed 5 --mode val`;

export function register(program: Command): void {
  addEpisodeOptions(program
    .command('solve')
    .description("Print the solver's action sequence for a seed (verified by playing it).")
    .argument('<envId>', 'environment id (see `ragen envs`; those marked "no solver" have none)'))
    .option('--json', 'print {envId, seed, actions, solved, return} as JSON')
    .addHelpText('after', EXAMPLES)
    .action(async (envId: string, opts: { seed: number; mode: EnvMode; config?: string[]; json?: boolean }) => {
      const id = resolveEnvId(envId);
      const spec = envSpec(id);
      const overrides = parseConfigPairs(opts.config);
      const config = resolveEnvConfig(id, overrides);
      if (!spec.solve) {
        const solvable = listEnvs().filter((e) => envSpec(e.id).solve).map((e) => e.id);
        throw new UsageError(`Environment \`${id}\` has no solver. Envs with one: ${solvable.join(', ')}.`);
      }
      const actions = spec.solve(config, opts.seed, opts.mode);
      if (!actions) throw new UsageError(`The ${id} solver found no solution for seed ${opts.seed}.`);
      const record = await verify(id, overrides, opts.seed, opts.mode, actions);
      if (opts.json) return console.log(JSON.stringify(record, null, 2));
      console.log(actions.join(' || '));
      console.log(`${id} seed ${opts.seed}: solved in ${actions.length} action(s), return ${record.return}`);
    });
}

/** Steps a fresh env through `actions`; a solver whose actions do not succeed is a bug, so it throws. */
async function verify(id: string, config: Record<string, unknown>, seed: number, mode: EnvMode, actions: string[]): Promise<SolveRecord> {
  const env = makeEnv(id, config, {});
  try {
    await env.reset({ seed, mode });
    let total = 0;
    for (const [i, action] of actions.entries()) {
      const r = await env.step(action);
      total += r.reward;
      if (r.terminated || r.truncated || i === actions.length - 1) {
        if (!r.info.success || i !== actions.length - 1) {
          throw new Error(`The ${id} solver's actions for seed ${seed} do not solve it (step ${i + 1} of ${actions.length}: success ${r.info.success}, terminated ${r.terminated}). This is a bug in the solver.`);
        }
      }
    }
    return { envId: id, seed, actions, solved: true, return: Math.round(total * 1e9) / 1e9 };
  } finally {
    await env.close();
  }
}
