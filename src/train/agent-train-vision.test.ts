// An agent program that sends images, trained through the gateway on a Qwen2.5-VL policy (`ragen model init --shape
// qwen2.5-vl-tiny`, local engine): its samples hold the sent images' pixels in the order the engine got them (two calls
// merged into one sample keep both), the engine's teacher-forced pass over a sample gives the log-probs the `openai`
// client got, and `ragen train` runs a step on such episodes (the local engine; the torch worker where PyTorch is) with
// its recomputed log-probs equal to the sampler's.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentProgram, collate } from '../agent/index.js';
import { initModelDir } from '../cli/commands/model-init.js';
import { torchPythonForTests } from '../engine/torch-testing.js';
import '../envs/index.js';
import { makeEnv } from '../env/index.js';
import { agentRollout, Gateway } from '../gateway/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { localServeTarget, type ServeTarget } from '../serve/index.js';
import { IMAGE_PAD } from '../tokenizer/index.js';
import { encodePng, type RgbImage } from '../util/index.js';
import { microConfig } from './testing.js';
import { train } from './trainer.js';

const OPENAI = pathToFileURL(join(import.meta.dirname, '..', '..', 'node_modules', 'openai', 'index.mjs')).href;
const root = mkdtempSync(join(tmpdir(), 'ragen-agent-vl-'));
const model = join(root, 'vl');
const agentFile = join(root, 'agent.mjs');
const agentLog = join(root, 'agent.jsonl');
let lakes: RgbImage[];
/** The lakes as the agent sends them, PNG data: URLs. */
let urls: string[];

/** What the agent logged of one episode: per call, the ids and log-probs the client got. */
interface Logged {
  episode: string;
  calls: { prompt: number[]; tokens: number[]; logprobs: number[] }[];
}
/** The agent's log of the episodes whose ids start with `prefix`. */
const logged = (prefix: string): Logged[] =>
  readFileSync(agentLog, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Logged)
    .filter((l) => l.episode.startsWith(prefix));

// The in-process agent: the official client, one call with the first lake, then the conversation continued with the
// reply and the second lake; it logs what it got and returns the share of even sampled ids as its reward.
const agentSource = (urls: string[], log: string) => `
import OpenAI from '${OPENAI}';
import { appendFileSync } from 'node:fs';
const LAKES = ${JSON.stringify(urls)};
const image = (i) => ({ type: 'image_url', image_url: { url: LAKES[i] } });
export async function run(ctx) {
  const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
  const messages = [
    { role: 'system', content: 'You walk on a frozen lake.' },
    { role: 'user', content: [{ type: 'text', text: 'The lake:' }, image(0), { type: 'text', text: 'Your move?' }] },
  ];
  const calls = [];
  for (let k = 0; k < 2; k++) {
    const r = await client.chat.completions.create(
      { model: 'policy', messages, max_tokens: 2, logprobs: true, return_token_ids: true },
      { signal: ctx.signal },
    );
    const c = r.choices[0];
    calls.push({ prompt: r.prompt_token_ids, tokens: c.token_ids, logprobs: c.logprobs.content.map((t) => t.logprob) });
    messages.push(
      { role: 'assistant', content: c.message.content },
      { role: 'user', content: [{ type: 'text', text: 'Now:' }, image(1)] },
    );
  }
  appendFileSync(${JSON.stringify(log)}, JSON.stringify({ episode: ctx.episodeId, calls }) + '\\n');
  const ids = calls.flatMap((c) => c.tokens);
  return ids.filter((id) => id % 2 === 0).length / ids.length;
}
`;

beforeAll(async () => {
  await initModelDir(model, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 });
  const env = makeEnv('VisualFrozenLake');
  lakes = [(await env.reset({ seed: 3 })).images![0]!, (await env.reset({ seed: 4 })).images![0]!];
  const url = (img: RgbImage) => `data:image/png;base64,${Buffer.from(encodePng(img)).toString('base64')}`;
  urls = lakes.map(url);
  writeFileSync(agentFile, agentSource(urls, agentLog));
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('an agent program that sends images', () => {
  let target: ServeTarget;
  let gateway: Gateway;
  beforeAll(async () => {
    target = await localServeTarget(model, (d) => d, { name: 'vl' });
    gateway = new Gateway({ ...target, maxTokens: 8, sampling: { temperature: 1, topP: 1, topK: 0 } });
    await gateway.listen(0);
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    target?.dispose();
  });

  it("gives samples holding its images in order, and the engine's pass over them gives the client's log-probs", async () => {
    const program = agentProgram({ module: agentFile, export: 'run', timeoutS: 60 });
    const { batch, outcomes } = await agentRollout(gateway, program, {
      tag: 'VisionAgent',
      groups: 1,
      groupSize: 1,
      seedBase: 0,
      idPrefix: 'vl',
      samplingSeed: 1, // its replies re-encode to their own ids, so the second call continues the first
    });
    expect(outcomes.map((o) => o.status)).toEqual(['ok']);
    const [{ calls }] = logged('vl-') as [Logged];
    const pad = target.tokenizer.encode(IMAGE_PAD)[0]!;
    // call 0's prompt shows the first lake, call 1's both (4 <|image_pad|> each), one sample of both calls
    expect(calls.map((c) => c.prompt.filter((id) => id === pad).length)).toEqual([4, 8]);
    expect(batch.samples).toHaveLength(1);
    const sample = batch.samples[0]!;
    expect(sample.turns).toEqual([0, 1]);
    expect(sample.images).toEqual(lakes);
    expect(batch.episodes[0]!.turns.map((t) => t.promptImages)).toEqual([[lakes[0]], lakes]);
    // the trained tokens are what the client got, with its log-probs
    const trained = sample.ids.flatMap((_, t) => (sample.lossMask[t] === 1 ? [t] : []));
    expect(trained.map((t) => sample.ids[t])).toEqual(calls.flatMap((c) => c.tokens));
    expect(trained.map((t) => sample.logprobs[t])).toEqual(calls.flatMap((c) => c.logprobs));
    // the teacher-forced pass sees each <|image_pad|> run with its image: the same log-probs
    const { logprobs } = await target.engine.forward(collate(batch.samples, target.tokenizer.eosTokenId), {
      role: 'policy',
    });
    const client = calls.flatMap((c) => c.logprobs);
    trained.forEach((t, i) => expect(Math.abs(logprobs[t]! - client[i]!), `token ${t}`).toBeLessThan(1e-4));
  }, 120_000);
});

const python = torchPythonForTests();
const engines = [
  { engine: 'local', overrides: [] },
  // the torch worker in float32 on the CPU (skipped without PyTorch >= 2 unless RAGEN_REQUIRE_BACKENDS=1)
  ...(python
    ? [
        {
          engine: 'torch',
          overrides: ['model.engine=torch', 'model.torch.device=cpu', 'model.torch.precision=float32'],
        },
      ]
    : []),
];

describe.each(engines)(
  'ragen train on an agent program that sends images ($engine engine)',
  ({ engine, overrides }) => {
    it("runs a step whose recomputed log-probs equal the sampler's, and records each call's images as sent", async () => {
      const config = microConfig(model, join(root, `run-${engine}`), [
        `env.train=[{agent: {module: ${JSON.stringify(agentFile)}, export: run, timeoutS: 60}, groups: 1, groupSize: 2}]`,
        'algo.advEstimator=grpo',
        'algo.recomputeOldLogprobs=true',
        'trainer.steps=1',
        'trainer.miniBatchSize=2',
        'trainer.microBatchSize=1',
        'trainer.checkpointEvery=0',
        ...overrides,
      ]);
      const r = await train({ config });
      const [m] = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
      expect(m!['gateway/episodes_ok']).toBe(2);
      expect(Number.isFinite(m!['actor/pg_loss'])).toBe(true);
      // π_old, recomputed by a teacher-forced pass over the samples with their images, against μ, what the client got
      expect(m!['mismatch/log_ratio_abs_max']).toBeLessThan(1e-4);
      // the rollout record keeps each call's request as sent: the image parts' data: URLs, base64 and all
      const records = readFileSync(join(r.runDir, 'rollouts', 'step-1.jsonl'), 'utf8')
        .trim()
        .split('\n');
      const call = (JSON.parse(records[0]!) as { turns: { call: { messages: unknown[] } }[] }).turns[1]!.call;
      const sent = JSON.stringify(call.messages);
      expect(urls.map((u) => sent.includes(JSON.stringify(u)))).toEqual([true, true]);
    }, 300_000);
  },
);
