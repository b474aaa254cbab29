// `ragen retrieval serve`: RAGEN's retrieval API (POST /retrieve, GET /health) over SearchQA's generated
// corpus, so SearchQA (or anything speaking that API) can search it over HTTP.
import type { Command } from 'commander';
import { startRetrievalServer } from '../../envs/index.js';
import { checkExposure, UsageError, type Exposure } from '../../util/index.js';

const EXAMPLES = `
Examples:
  $ ragen retrieval serve                              # http://127.0.0.1:8000, corpus of world 0
  $ ragen retrieval serve --port 8123 --corpus-seed 2
  $ curl -s localhost:8000/retrieve -H 'content-type: application/json' -d '{"query": "Dorkwick", "top_k": 3}'
  $ ragen eval --env SearchQA --policy oracle --config SearchQA.retrievalUrl=http://127.0.0.1:8000`;

function parsePort(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`Bad --port \`${text}\`: give an integer in 0..65535 (0 picks a free port).`);
  return n;
}

function parseSeedOption(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new UsageError(`Bad --corpus-seed \`${text}\`: give an integer >= 0 (SearchQA's corpusSeed).`);
  return n;
}

export function register(program: Command): void {
  const retrieval = program
    .command('retrieval')
    .description("A retrieval server with RAGEN's API over the SearchQA corpus.");
  retrieval
    .command('serve')
    .description(
      'Serve BM25 over the generated SearchQA corpus: POST /retrieve {query, top_k} -> {results: [{id, content, score}]}, GET /health. Runs until interrupted.',
    )
    .option('--port <n>', "port to listen on (RAGEN's server uses 8000)", parsePort, 8000)
    .option(
      '--host <addr>',
      'address to bind; beyond loopback (0.0.0.0) needs --insecure: the API has no access control',
      '127.0.0.1',
    )
    .option('--insecure', 'listen beyond loopback (a trusted network only: anyone who reaches it can query)')
    .option(
      '--corpus-seed <n>',
      "world seed of the corpus (SearchQA's corpusSeed; must match the env's for its questions)",
      parseSeedOption,
      0,
    )
    .addHelpText('after', EXAMPLES)
    .action(async (opts: { port: number; host: string; corpusSeed: number; insecure?: boolean }) => {
      const exposure = (port?: number): Exposure => ({
        server: 'ragen retrieval serve',
        host: opts.host,
        ...(port ? { port } : {}),
        insecure: opts.insecure === true,
      });
      checkExposure(exposure());
      console.error(`ragen: building the corpus of world ${opts.corpusSeed} and its BM25 index...`);
      let server;
      try {
        server = await startRetrievalServer({ port: opts.port, host: opts.host, corpusSeed: opts.corpusSeed });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE')
          throw new UsageError(
            `Port ${opts.port} on ${opts.host} is in use: pick another with --port (0 picks a free one).`,
          );
        if (code === 'EADDRNOTAVAIL')
          throw new UsageError(`Cannot bind --host ${opts.host}: not an address of this machine.`);
        throw err;
      }
      const warning = checkExposure(exposure(Number(new URL(server.url).port)));
      if (warning) console.error(warning);
      console.log(`Retrieval server listening on ${server.url} (POST /retrieve, GET /health); Ctrl-C stops it.`);
      const stop = (): void => void server!.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}
