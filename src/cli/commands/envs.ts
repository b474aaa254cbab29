// `ragen envs`: every registered environment id with a one-line description.
import type { Command } from 'commander';
import { envSpec, listEnvs } from '../../env/index.js';

/** One row of `ragen envs --json`. */
export interface EnvListing {
  id: string;
  description: string;
  maxActionsPerEpisode: number;
  hasSolver: boolean;
  /** The outside service the env needs, if any (e.g. Lean's Kimina server). */
  requires?: string;
}

export function register(program: Command): void {
  program
    .command('envs')
    .description('List the registered environments with a one-line description.')
    .option('--json', 'print a JSON array of {id, description, maxActionsPerEpisode, hasSolver}')
    .addHelpText('after', '\nExamples:\n  $ ragen envs\n  $ ragen envs --json')
    .action((opts: { json?: boolean }) => {
      const rows: EnvListing[] = listEnvs().map(({ id, description }) => {
        const spec = envSpec(id);
        return {
          id,
          description,
          maxActionsPerEpisode: spec.maxActionsPerEpisode,
          hasSolver: spec.solve !== undefined,
          ...(spec.requires ? { requires: spec.requires } : {}),
        };
      });
      if (opts.json) return console.log(JSON.stringify(rows, null, 2));
      const width = Math.max(...rows.map((r) => r.id.length));
      for (const r of rows)
        console.log(
          `${r.id.padEnd(width)}  ${r.description}${r.hasSolver ? '' : ' (no solver)'}${r.requires ? ` [needs ${r.requires}]` : ''}`,
        );
    });
}
