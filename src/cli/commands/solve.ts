// `ragen solve`: the solver's action sequence for a seed, checked by stepping the env through it.
import type { Command } from 'commander';
import {
  envSpec,
  listEnvs,
  makeEnv,
  resolveEnvConfig,
  resolveEnvId,
  type EnvMode,
  type EnvSpec,
} from '../../env/index.js';
import { parseConfigPairs, UsageError } from '../../util/index.js';
import { addEpisodeOptions } from './env-options.js';

/** The `--json` output of `ragen solve`. */
export interface SolveRecord {
  envId: string;
  seed: number;
  actions: string[];
  /** Always true, except where chance can defeat the solver (`EnvSpec.solverMayFail`: a slippery lake). */
  solved: boolean;
  return: number;
  /** Why the actions did not solve the episode (only with `solved: false`). */
  reason?: string;
}

const EXAMPLES = `
Examples:
  $ ragen solve SimpleSokoban --seed 3
  $ ragen solve Bandit --seed 0 --json
  $ ragen solve MetamathQA --seed 5 --mode val
  $ ragen solve FrozenLake --seed 1     # slippery: the shortest safe path is a plan, a slip may defeat it`;

export function register(program: Command): void {
  addEpisodeOptions(
    program
      .command('solve')
      .description("Print the solver's action sequence for a seed (verified by playing it).")
      .argument('<envId>', 'environment id (see `ragen envs`; those marked "no solver" have none)'),
  )
    .option('--json', 'print {envId, seed, actions, solved, return} as JSON (and reason when not solved)')
    .addHelpText('after', EXAMPLES)
    .action(async (envId: string, opts: { seed: number; mode: EnvMode; config?: string[]; json?: boolean }) => {
      const id = resolveEnvId(envId);
      const spec = envSpec(id);
      const overrides = parseConfigPairs(opts.config);
      const config = resolveEnvConfig(id, overrides);
      if (!spec.solve) {
        const solvable = listEnvs()
          .filter((e) => envSpec(e.id).solve)
          .map((e) => e.id);
        throw new UsageError(`Environment \`${id}\` has no solver. Envs with one: ${solvable.join(', ')}.`);
      }
      const actions = spec.solve(config, opts.seed, opts.mode);
      if (!actions) throw new UsageError(`The ${id} solver found no solution for seed ${opts.seed}.`);
      const record = await verify(id, spec, config, overrides, opts.seed, opts.mode, actions);
      if (opts.json) return console.log(JSON.stringify(record, null, 2));
      console.log(actions.join(' || '));
      if (record.solved)
        console.log(`${id} seed ${opts.seed}: solved in ${actions.length} action(s), return ${record.return}`);
      else console.log(`${id} seed ${opts.seed}: not solved, return ${record.return}: ${record.reason}`);
    });
}

/**
 * Steps a fresh env through `actions`. Actions that do not succeed are a bug in the solver (it throws),
 * unless the spec says chance can defeat them under this config: then the record says `solved: false`.
 */
async function verify(
  id: string,
  spec: EnvSpec,
  config: Record<string, unknown>,
  overrides: Record<string, unknown>,
  seed: number,
  mode: EnvMode,
  actions: string[],
): Promise<SolveRecord> {
  const env = makeEnv(id, overrides, {});
  try {
    await env.reset({ seed, mode });
    let total = 0;
    for (const [i, action] of actions.entries()) {
      const r = await env.step(action);
      total += r.reward;
      if (r.terminated || r.truncated || i === actions.length - 1) {
        if (!r.info.success || i !== actions.length - 1) {
          const what = `step ${i + 1} of ${actions.length}: success ${r.info.success}, terminated ${r.terminated}, truncated ${r.truncated}`;
          if (spec.solverMayFail?.(config)) {
            const reason = `chance defeated the solver's plan on this seed (${what}); under this config its actions are a plan, not a guarantee`;
            return { envId: id, seed, actions, solved: false, return: round(total), reason };
          }
          throw new Error(
            `The ${id} solver's actions for seed ${seed} do not solve it (${what}). This is a bug in the solver.`,
          );
        }
        break;
      }
    }
    return { envId: id, seed, actions, solved: true, return: round(total) };
  } finally {
    await env.close();
  }
}

const round = (x: number): number => Math.round(x * 1e9) / 1e9;
