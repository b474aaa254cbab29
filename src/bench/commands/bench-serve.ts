// `ragen bench serve`: `ragen serve` in its own process under load from this one through the official openai
// client on loopback (src/bench/serve.ts), then the engine alone on the same prompts in this process.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { parsePositiveInt, RagenError } from '../../util/index.js';
import { resolveModelDir } from '../../eval/index.js';

interface BenchServeOptions {
  model: string;
  requests: number;
  maxTokens: number;
  singles: number;
  maxBatchSize: number;
  json?: boolean;
}

export function register(bench: Command): void {
  bench
    .command('serve')
    .description(
      'ragen serve (own process) under load from the official openai client on loopback, greedy: single-request latency, then N concurrent requests: requests/s, tokens/s, batches; and the engine alone on the same prompts.',
    )
    .option('--model <dir>', 'model or run directory to serve', 'models/ragen-tiny')
    .option('--requests <n>', 'concurrent requests of the load phase', parsePositiveInt('--requests'), 200)
    .option('--max-tokens <n>', 'max_tokens of every request', parsePositiveInt('--max-tokens'), 16)
    .option(
      '--singles <n>',
      'sequential requests timed for the single-request latency',
      parsePositiveInt('--singles'),
      10,
    )
    .option('--max-batch-size <n>', 'most prompts per engine.generate call', parsePositiveInt('--max-batch-size'), 64)
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  $ ragen bench serve\n  $ ragen bench serve --requests 500 --max-tokens 32 --json',
    )
    .action(async (opts: BenchServeOptions) => {
      const { localServeTarget } = await import('../../serve/index.js');
      const { runServeLoad, runEngineOnly } = await import('../serve.js');
      const modelDir = resolveModelDir(opts.model);
      if (!opts.json)
        console.error(
          `Starting ragen serve ${modelDir}; ${opts.singles} single requests, then ${opts.requests} at once...`,
        );
      const machine = {
        node: process.version,
        cpu: `${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}`,
        loadAverage: os.loadavg()[0]!,
      };
      const child = await startServer(modelDir, opts);
      let load;
      try {
        load = await runServeLoad(child.url, 'bench', opts);
      } finally {
        child.stop();
      }
      const target = await localServeTarget(modelDir, resolveModelDir, { name: 'bench' });
      const engine = await runEngineOnly(target.engine, target.tokenizer, opts);
      if (opts.json)
        return console.log(JSON.stringify({ ...machine, model: modelDir, ...load, engineOnly: engine }, null, 2));
      console.log(
        `node ${machine.node}, ${machine.cpu}, load average ${machine.loadAverage.toFixed(2)}; ${modelDir}, max_tokens ${load.maxTokens}, greedy`,
      );
      console.log(
        `single request:   ${load.singleLatencyMs.toFixed(1)} ms median (${(1000 / load.singleLatencyMs).toFixed(1)} requests/s one at a time)`,
      );
      console.log(
        `${load.requests} concurrent:   ${load.seconds.toFixed(2)} s, ${load.requestsPerS.toFixed(1)} requests/s, ${load.tokensPerS.toFixed(0)} tokens/s; latency p50 ${load.p50Ms.toFixed(0)} ms, p99 ${load.p99Ms.toFixed(0)} ms`,
      );
      console.log(
        `batching:         ${load.batches} generate calls, mean batch ${load.meanBatch.toFixed(1)}, largest ${load.maxBatch}; ${load.batchingSpeedup.toFixed(1)}x the one-at-a-time requests/s`,
      );
      console.log(
        `engine alone:     ${engine.tokensPerS.toFixed(0)} tokens/s on the same prompts in batches of ${opts.maxBatchSize} (no HTTP): the server reaches ${((100 * load.tokensPerS) / engine.tokensPerS).toFixed(0)}%`,
      );
    });
}

/** `ragen serve <dir> --port 0` as a child process; resolves with its URL once it listens. */
function startServer(modelDir: string, opts: BenchServeOptions): Promise<{ url: string; stop: () => void }> {
  // bin/ragen.js of this package: four levels up from dist/src/bench/commands, three from src/bench/commands (tsx).
  const bin = ['../../../../bin/ragen.js', '../../../bin/ragen.js']
    .map((p) => fileURLToPath(new URL(p, import.meta.url)))
    .find((p) => existsSync(p));
  if (!bin)
    throw new RagenError(
      'bin/ragen.js not found beside this package; run `ragen bench serve` from an installed or built ragen-ts.',
    );
  const child = spawn(
    process.execPath,
    [
      bin,
      'serve',
      modelDir,
      '--port',
      '0',
      '--name',
      'bench',
      '--context-length',
      '8192',
      '--max-batch-size',
      String(opts.maxBatchSize),
      '--max-concurrent',
      String(Math.max(512, opts.requests)),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /at (http:\/\/\S+\/v1)/.exec(err);
      if (m) resolve({ url: m[1]!, stop: () => child.kill('SIGTERM') });
    });
    child.on('exit', (code) =>
      reject(new RagenError(`ragen serve exited (${code}) before it listened: ${err.trim()}`)),
    );
  });
}
