// `ragen bench serve`: a running server under load through the official `openai` client: single-request
// latency, then N concurrent requests (requests/s, tokens/s, batches from GET /stats); and the engine's own
// batched generate of the same prompts without HTTP (what the serving layer costs).
import OpenAI from 'openai';
import type { Engine } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { BatcherStats } from '../serve/index.js';

/** What the load phase measures with. */
export interface ServeBenchOptions {
  /** Concurrent requests. @default 200 */
  requests?: number;
  /** max_tokens of every request (greedy; a request may stop early at EOS). @default 16 */
  maxTokens?: number;
  /** Sequential requests timed for the single-request latency. @default 10 */
  singles?: number;
}

/** What the load phase measured. */
export interface ServeLoadResult {
  requests: number;
  maxTokens: number;
  /** Median wall time of one request alone (ms). */
  singleLatencyMs: number;
  seconds: number;
  requestsPerS: number;
  tokensPerS: number;
  completionTokens: number;
  /** engine.generate calls of the load phase, and prompts per call. */
  batches: number;
  meanBatch: number;
  maxBatch: number;
  p50Ms: number;
  p99Ms: number;
  /** requests/s all at once over requests/s one at a time (1000 / singleLatencyMs): what batching buys. */
  batchingSpeedup: number;
}

/** The i-th benchmark message: a short user turn. */
export function benchMessage(i: number): string {
  return `Turn ${1 + (i % 7)}:\nState:\n######\n#${'_P_X_O'.slice(i % 3)}#\n######\nYou have ${3 + (i % 5)} actions left.`;
}

/** Load a server at `url` (its …/v1 base) serving `model`. */
export async function runServeLoad(url: string, model: string, o: ServeBenchOptions = {}): Promise<ServeLoadResult> {
  const N = o.requests ?? 200;
  const maxTokens = o.maxTokens ?? 16;
  const client = new OpenAI({ baseURL: url, apiKey: 'bench', maxRetries: 0, timeout: 600_000 });
  const stats = async (): Promise<BatcherStats> =>
    (await fetch(new URL('/stats', url))).json() as Promise<BatcherStats>;
  const ask = (i: number) =>
    client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: benchMessage(i) }],
      max_tokens: maxTokens,
      temperature: 0,
    });
  await ask(0); // warm-up
  const singles: number[] = [];
  for (let i = 0; i < (o.singles ?? 10); i++) {
    const t = performance.now();
    await ask(i);
    singles.push(performance.now() - t);
  }
  const before = await stats();
  const latencies: number[] = [];
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const t = performance.now();
      const r = await ask(i);
      latencies.push(performance.now() - t);
      return r;
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const after = await stats();
  const completionTokens = answers.reduce((a, r) => a + (r.usage?.completion_tokens ?? 0), 0);
  const batches = after.batches - before.batches;
  const single = quantile(singles, 0.5);
  return {
    requests: N,
    maxTokens,
    singleLatencyMs: single,
    seconds,
    requestsPerS: N / seconds,
    tokensPerS: completionTokens / seconds,
    completionTokens,
    batches,
    meanBatch: (after.jobs - before.jobs) / Math.max(1, batches),
    maxBatch: after.maxBatch,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    batchingSpeedup: N / seconds / (1000 / single),
  };
}

/** The same prompts (chat-templated) through `engine.generate` in batches of `maxBatchSize`: tokens/s without HTTP. */
export async function runEngineOnly(
  engine: Engine,
  tok: Tokenizer,
  o: ServeBenchOptions & { maxBatchSize?: number } = {},
): Promise<{ seconds: number; tokensPerS: number }> {
  const N = o.requests ?? 200;
  const B = o.maxBatchSize ?? 64;
  const prompts = Array.from({ length: N }, (_, i) =>
    tok.encode(tok.applyChatTemplate([{ role: 'user', content: benchMessage(i) }], { addGenerationPrompt: true })),
  );
  const t = performance.now();
  let tokens = 0;
  for (let s = 0; s < N; s += B) {
    const gens = await engine.generate(prompts.slice(s, s + B), {
      maxNewTokens: o.maxTokens ?? 16,
      temperature: 0,
      stopTokenIds: [tok.eosTokenId],
      seed: 0,
    });
    tokens += gens.reduce((a, g) => a + g.tokens.length, 0);
  }
  const seconds = (performance.now() - t) / 1000;
  return { seconds, tokensPerS: tokens / seconds };
}

function quantile(xs: number[], q: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}
