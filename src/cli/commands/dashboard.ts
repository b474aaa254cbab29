// `ragen dashboard`: serve the observatory (runs table, curves, collapse view, trajectories, eval, live play) for the
// run directories given, on 127.0.0.1, until interrupted.
import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { startDashboard } from '../../dashboard/index.js';
import { UsageError } from '../../util/index.js';
import { parsePositiveInt } from './env-options.js';

const EXAMPLES = `
Examples:
  $ ragen dashboard                        # every run under runs/
  $ ragen dashboard runs/ other-runs/ --port 8080
  $ ragen dashboard runs/SimpleSokoban__gae__10000__20250101-120000`;

export function register(program: Command): void {
  program
    .command('dashboard')
    .description('Web dashboard over run directories: runs, curves, collapse view, trajectories, eval results, live play.')
    .argument('[runsDirs...]', 'run directories or folders holding them [runs]')
    .option('--port <n>', 'port on 127.0.0.1 [any free port]', parsePositiveInt('--port'))
    .option('--allow-unverified-checkpoint', "let play load a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)")
    .addHelpText('after', EXAMPLES)
    .action(async (dirs: string[], opts: { port?: number; allowUnverifiedCheckpoint?: boolean }) => {
      const roots = dirs.length > 0 ? dirs : ['runs'];
      for (const r of roots) {
        if (!existsSync(r) || !statSync(r).isDirectory()) throw new UsageError(`\`${r}\` is not a folder: give run directories or the folder that holds them (e.g. runs/, where \`ragen train\` writes).`);
      }
      let dash;
      try {
        dash = await startDashboard({ roots, ...(opts.port !== undefined ? { port: opts.port } : {}), ...(opts.allowUnverifiedCheckpoint ? { allowUnverifiedCheckpoint: true } : {}) });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE' || code === 'EACCES') throw new UsageError(`Cannot listen on port ${opts.port} (${code}); pick another with --port, or leave it out for a free one.`);
        throw err;
      }
      console.log(`ragen dashboard: ${dash.url}  (reading ${roots.join(', ')}; Ctrl-C stops)`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          void dash.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
