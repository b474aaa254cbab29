// `ragen dashboard`: serve the observatory (runs table, curves, collapse view, trajectories, eval, live play) for the
// run directories given, on 127.0.0.1 (beyond loopback only with --insecure: it has no access control), until
// interrupted.
import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { startDashboard } from '../../dashboard/index.js';
import { checkExposure, type Exposure, parsePositiveInt, UsageError } from '../../util/index.js';

const EXAMPLES = `
Examples:
  $ ragen dashboard                        # every run under runs/
  $ ragen dashboard runs/ other-runs/ --port 8080
  $ ragen dashboard runs/SimpleSokoban__gae__10000__20250101-120000`;

export function register(program: Command): void {
  program
    .command('dashboard')
    .description(
      'Web dashboard over run directories: runs, curves, collapse view, trajectories, eval results, live play.',
    )
    .argument('[runsDirs...]', 'run directories or folders holding them [runs]')
    .option('--port <n>', 'port to listen on [any free port]', parsePositiveInt('--port'))
    .option('--host <addr>', 'address to listen on; beyond loopback (0.0.0.0) needs --insecure', '127.0.0.1')
    .option('--insecure', 'listen beyond loopback (a trusted network only: anyone who reaches it reads every run)')
    .option(
      '--allow-unverified-checkpoint',
      'let play load a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)',
    )
    .addHelpText('after', EXAMPLES)
    .action(
      async (
        dirs: string[],
        opts: { port?: number; host: string; insecure?: boolean; allowUnverifiedCheckpoint?: boolean },
      ) => {
        const exposure = (port?: number): Exposure => ({
          server: 'ragen dashboard',
          host: opts.host,
          ...(port ? { port } : {}),
          insecure: opts.insecure === true,
        });
        checkExposure(exposure());
        const roots = dirs.length > 0 ? dirs : ['runs'];
        for (const r of roots) {
          if (!existsSync(r) || !statSync(r).isDirectory())
            throw new UsageError(
              `\`${r}\` is not a folder: give run directories or the folder that holds them (e.g. runs/, where \`ragen train\` writes).`,
            );
        }
        let dash;
        try {
          dash = await startDashboard({
            roots,
            host: opts.host,
            ...(opts.port !== undefined ? { port: opts.port } : {}),
            ...(opts.allowUnverifiedCheckpoint ? { allowUnverifiedCheckpoint: true } : {}),
          });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'EADDRINUSE' || code === 'EACCES')
            throw new UsageError(
              `Cannot listen on port ${opts.port} (${code}); pick another with --port, or leave it out for a free one.`,
            );
          throw err;
        }
        const warning = checkExposure(exposure(Number(new URL(dash.url).port)));
        if (warning) console.error(warning);
        console.log(`ragen dashboard: ${dash.url}  (reading ${roots.join(', ')}; Ctrl-C stops)`);
        await new Promise<void>((resolve) => {
          const stop = () => {
            void dash.close().then(resolve);
          };
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
      },
    );
}
