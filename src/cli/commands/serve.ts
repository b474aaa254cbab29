// `ragen serve`: an OpenAI-compatible HTTP server for a checkpoint (src/serve), until Ctrl-C.
import type { Command } from 'commander';
// batcher.ts alone (not serve/index.ts): its defaults without loading the server at start-up.
import { BATCHER_DEFAULTS } from '../../serve/index.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadSavedConfig } from '../../config/index.js';
import { checkExposure, type Exposure, parsePositiveInt, parseSeed, UsageError } from '../../util/index.js';
import { fetchHubModel, resolveModelDir } from '../../eval/index.js';

/** Options of `ragen serve`, as commander parses them. */
export interface ServeCliOptions {
  host: string;
  port: number;
  name?: string;
  tokenizer?: string;
  chatTemplate?: 'auto' | 'model' | 'ragen-qwen';
  apiKey?: string;
  insecure?: boolean;
  maxTokens: number;
  contextLength?: number;
  maxBodyBytes: number;
  maxConcurrent: number;
  maxBatchSize: number;
  batchWindowMs: number;
  seed: number;
  engine: 'local' | 'torch';
  device?: string;
  precision?: string;
  allowUnverifiedCheckpoint?: boolean;
}

const EXAMPLES = `
Examples:
  $ ragen serve ragen-tiny                              # http://127.0.0.1:8000/v1, model name "ragen-tiny"
  $ ragen serve runs/my-run --port 8001 --name policy   # the run's latest checkpoint
  $ ragen serve ragen-tiny --engine torch --device cpu   # a PyTorch worker generates
  $ RAGEN_API_KEY=secret ragen serve ragen-tiny --host 0.0.0.0
  $ curl http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
      -d '{"model": "ragen-tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "return_token_ids": true}'
See docs/serving.md.`;

export function register(program: Command): void {
  program
    .command('serve')
    .description(
      'Serve a checkpoint over an OpenAI-compatible HTTP API (chat, completions, streaming, logprobs, token ids).',
    )
    .argument(
      '<dir>',
      'model directory (Hugging Face layout), run directory (its latest checkpoint), shipped model (ragen-tiny) or Hub id',
    )
    .option(
      '--host <host>',
      'address to listen on; beyond loopback (0.0.0.0) needs --api-key, or --insecure',
      '127.0.0.1',
    )
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, 8000)
    .option('--name <id>', "the model id clients send (default: the directory's name)")
    .option('--tokenizer <dir>', "tokenizer directory (default: the checkpoint's own)")
    .option(
      '--chat-template <choice>',
      "model (the checkpoint's own), ragen-qwen (ragen's append-only Qwen template) or auto, as model.chatTemplate in training (default: a run directory's model.chatTemplate, else model)",
      parseChatTemplate,
    )
    .option('--api-key <key>', 'require `Authorization: Bearer <key>` (default: $RAGEN_API_KEY, else none)')
    .option('--insecure', 'listen beyond loopback without an API key (a trusted network only)')
    .option('--max-tokens <n>', 'most tokens one choice may generate', parsePositiveInt('--max-tokens'), 1024)
    .option(
      '--context-length <n>',
      "prompt + completion tokens per request (default: the model's max_position_embeddings)",
      parsePositiveInt('--context-length'),
    )
    .option('--max-body-bytes <n>', 'largest request body', parsePositiveInt('--max-body-bytes'), 1 << 20)
    .option(
      '--max-concurrent <n>',
      'generation requests in flight at once; more get 429',
      parsePositiveInt('--max-concurrent'),
      512,
    )
    .option(
      '--max-batch-size <n>',
      'most prompts per engine.generate call',
      parsePositiveInt('--max-batch-size'),
      BATCHER_DEFAULTS.maxBatchSize,
    )
    .option(
      '--batch-window-ms <ms>',
      'how long a batch waits for more requests before it starts',
      parseNonNegativeInt('--batch-window-ms'),
      BATCHER_DEFAULTS.batchWindowMs,
    )
    .option('--seed <n>', 'seed of the batch seeds of unseeded sampled requests', parseSeed, 0)
    .option(
      '--engine <kind>',
      'local (in-process kernels; streams token by token, top_logprobs) or torch (a PyTorch worker; streams per batch)',
      parseEngine,
      'local',
    )
    .option('--device <device>', 'torch engine: auto (CUDA when there is a GPU), cpu, cuda, cuda:1 (default: auto)')
    .option('--precision <p>', 'torch engine: auto (bf16 autocast on a GPU), float32, bfloat16 (default: auto)')
    .option(
      '--allow-unverified-checkpoint',
      'accept a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)',
    )
    .addHelpText('after', EXAMPLES)
    .action(async (dir: string, opts: ServeCliOptions) => {
      if (opts.engine !== 'torch' && (opts.device !== undefined || opts.precision !== undefined)) {
        throw new UsageError('--device and --precision set the torch engine; add --engine torch (or drop them).');
      }
      const apiKey = opts.apiKey ?? process.env['RAGEN_API_KEY'];
      const exposure = (port?: number): Exposure => ({
        server: 'ragen serve',
        host: opts.host,
        ...(port ? { port } : {}),
        secret: { noun: 'API key', given: Boolean(apiKey), how: '--api-key (or RAGEN_API_KEY)' },
        insecure: opts.insecure === true,
      });
      checkExposure(exposure()); // before loading the model: a refused address costs nothing
      await fetchHubModel(dir);
      const { OpenAIServer, localServeTarget, torchServeTarget } = await import('../../serve/index.js'); // loads the engine only when serving
      const chatTemplate = opts.chatTemplate ?? runChatTemplate(dir);
      const common = {
        ...(opts.tokenizer ? { tokenizerDir: opts.tokenizer } : {}),
        ...(opts.name ? { name: opts.name } : {}),
        ...(chatTemplate ? { chatTemplate } : {}),
      };
      const openDir = (d: string) =>
        resolveModelDir(d, opts.allowUnverifiedCheckpoint ? { allowUnverified: true } : {}); // says which checkpoint of a run
      const target =
        opts.engine === 'torch'
          ? await torchServeTarget(dir, openDir, {
              ...common,
              torch: {
                ...(opts.device ? { device: opts.device } : {}),
                ...(opts.precision ? { precision: opts.precision } : {}),
              },
            })
          : await localServeTarget(dir, openDir, common);
      const server = new OpenAIServer({
        ...target,
        ...(apiKey ? { apiKey } : {}),
        maxTokens: opts.maxTokens,
        ...(opts.contextLength !== undefined ? { contextLength: opts.contextLength } : {}),
        maxBodyBytes: opts.maxBodyBytes,
        maxConcurrent: opts.maxConcurrent,
        maxBatchSize: opts.maxBatchSize,
        batchWindowMs: opts.batchWindowMs,
        seed: opts.seed,
        log: (line) => console.error(`[serve] ${line}`),
      });
      let url: string;
      try {
        ({ url } = await server.listen(opts.port, opts.host));
      } catch (err) {
        target.dispose();
        throw new UsageError(
          `Cannot listen on ${opts.host}:${opts.port} (${(err as Error).message}); pick another --port or --host.`,
        );
      }
      const warning = checkExposure(exposure(Number(new URL(url).port)));
      if (warning) console.error(warning);
      console.error(
        `Serving \`${target.modelName}\` (${target.modelDir}, engine ${target.engine.kind}) at ${url}${apiKey ? ' (API key required)' : ''}. Ctrl-C stops.`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => {
          console.error(
            `Stopping: ${server.stats.jobs} choices in ${server.stats.batches} batches (largest ${server.stats.maxBatch}).`,
          );
          void server.close().then(() => {
            target.dispose();
            resolve();
          });
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}

function parsePort(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`Bad --port \`${text}\`: give an integer in [0, 65535].`);
  return n;
}

function parseNonNegativeInt(name: string): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`Bad ${name} \`${text}\`: give an integer >= 0.`);
    return n;
  };
}

/** A run directory's `model.chatTemplate` (served as it was trained), else none (the checkpoint's own template). */
export function runChatTemplate(dir: string): ServeCliOptions['chatTemplate'] {
  if (!existsSync(join(dir, 'config.yaml')) || !existsSync(join(dir, 'checkpoints'))) return undefined;
  return loadSavedConfig(dir).model.chatTemplate;
}

function parseChatTemplate(text: string): NonNullable<ServeCliOptions['chatTemplate']> {
  if (text !== 'auto' && text !== 'model' && text !== 'ragen-qwen')
    throw new UsageError(`Bad --chat-template \`${text}\`: give model, ragen-qwen or auto.`);
  return text;
}

function parseEngine(text: string): 'local' | 'torch' {
  if (text !== 'local' && text !== 'torch') throw new UsageError(`Bad --engine \`${text}\`: give local or torch.`);
  return text;
}
