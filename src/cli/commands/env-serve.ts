// `ragen env serve`: the `env` command group and its `serve` subcommand, which serves registered envs over
// WebSocket sessions in OpenEnv's message shape until Ctrl-C (docs/environments.md, "Serving environments").
import type { Command } from 'commander';
import { checkExposure, parsePositive, parsePositiveInt, UsageError } from '../../util/index.js';
import { clientToken, EnvServer, TOKEN_ENV } from '../../env/remote/index.js';

interface ServeOptions {
  port: number;
  host: string;
  maxSessions: number;
  idleTimeout: number;
  maxMessageBytes: number;
  stepTimeout: number;
  stepDelayMs: number;
  verbose?: boolean;
  token?: string;
  insecure?: boolean;
}

const EXAMPLES = `
Examples:
  $ ragen env serve SimpleSokoban FrozenLake --port 8765
  $ RAGEN_ENV_TOKEN=$(openssl rand -hex 16) ragen env serve SimpleSokoban --host 0.0.0.0   # clients set the same RAGEN_ENV_TOKEN
  $ curl http://127.0.0.1:8765/metadata
  $ ragen play remote:ws://127.0.0.1:8765/SimpleSokoban --seed 3 --actions "Up || Left"
  $ ragen train --config configs/sokoban-ppo.yaml env.train.0.tag=remote:ws://127.0.0.1:8765/SimpleSokoban`;

/** A TCP port (0 = any free port). */
function parsePort(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`Bad --port \`${text}\`: give an integer from 0 to 65535 (0 picks a free port).`);
  return n;
}

/** Milliseconds >= 0. */
function parseDelay(text: string): number {
  const n = Number(text);
  if (!(Number.isFinite(n) && n >= 0) || text.trim() === '')
    throw new UsageError(`Bad --step-delay-ms \`${text}\`: give milliseconds >= 0 (0 = no added delay).`);
  return n;
}

export function register(program: Command): void {
  const env = program
    .command('env')
    .description(
      'Environment services: `ragen env serve` serves environments over the network (see also `ragen envs`).',
    );
  env
    .command('serve')
    .description(
      'Serve registered environments over WebSocket sessions (OpenEnv message shape): ws://HOST:PORT/<EnvId>, plus GET /health, /metadata, /schema. Runs until Ctrl-C.',
    )
    .argument('<envId...>', 'environment ids to serve (see `ragen envs`)')
    .option('--port <n>', 'TCP port (0 picks a free one)', parsePort, 8765)
    .option(
      '--host <addr>',
      'address to listen on; 0.0.0.0 serves other machines (needs --token, or --insecure)',
      '127.0.0.1',
    )
    .option('--token <token>', `shared token clients must send (they read ${TOKEN_ENV}) [default: $${TOKEN_ENV}]`)
    .option('--insecure', 'listen beyond loopback without a token (a trusted network only)')
    .option(
      '--max-sessions <n>',
      'concurrent sessions; past it a connection gets CAPACITY_REACHED',
      parsePositiveInt('--max-sessions'),
      2048,
    )
    .option(
      '--idle-timeout <s>',
      'reap a session after this many seconds without a message',
      parsePositive('--idle-timeout'),
      300,
    )
    .option(
      '--max-message-bytes <n>',
      'largest message handled; a larger one gets MESSAGE_TOO_LARGE',
      parsePositiveInt('--max-message-bytes'),
      1 << 20,
    )
    .option(
      '--step-timeout <s>',
      "longest an async env's reset/step may take before STEP_TIMEOUT closes the session",
      parsePositive('--step-timeout'),
      30,
    )
    .option(
      '--step-delay-ms <ms>',
      'benchmarking aid: wait this long before each reset and step (the latency of a slow or distant env)',
      parseDelay,
      0,
    )
    .option('--verbose', 'also log every session opened and closed')
    .addHelpText('after', EXAMPLES)
    .action(async (ids: string[], opts: ServeOptions) => {
      const token = opts.token ?? clientToken();
      const server = new EnvServer({
        envIds: ids,
        ...(token ? { token } : {}),
        ...(opts.insecure ? { insecure: true } : {}),
        host: opts.host,
        port: opts.port,
        maxSessions: opts.maxSessions,
        idleTimeoutS: opts.idleTimeout,
        maxMessageBytes: opts.maxMessageBytes,
        stepTimeoutS: opts.stepTimeout,
        stepDelayMs: opts.stepDelayMs,
        ...(opts.verbose ? { verbose: true } : {}),
      });
      let port: number;
      try {
        port = await server.listen();
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE')
          throw new UsageError(
            `Port ${opts.port} on ${opts.host} is in use; pick another with --port (0 picks a free one).`,
          );
        if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
          throw new UsageError(`Cannot listen on --host ${opts.host}: no such local address.`);
        throw err;
      }
      const warning = checkExposure(server.exposure(port));
      if (warning) console.error(warning);
      const base = `${opts.host}:${port}`;
      console.log(
        `ragen env serve: ${server.envIds.join(', ')} at ws://${base}/<EnvId> (health: http://${base}/health)${opts.stepDelayMs > 0 ? `, ${opts.stepDelayMs} ms added to each reset and step` : ''}; Ctrl-C stops`,
      );
      for (const id of server.envIds) console.log(`  remote:ws://${base}/${id}`);
      if (token) console.log(`  clients send the token: set ${TOKEN_ENV} in their environment`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string): void => {
          console.log(`ragen env serve: ${signal}, closing ${server.sessionCount} session(s)`);
          void server.close().then(resolve);
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
    });
}
