// `ragen train` on agent programs (env.train.N.agent): a Node program written here (plain fetch to OPENAI_BASE_URL,
// its reward to RAGEN_REWARD_URL) trained through the gateway: metrics, rollouts, checkpoints, exact resume, the
// sampled ids are the trained ids, and the update moves the policy toward what the program rewards.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../metrics/index.js';
import { sequenceBatch, type LocalEngine } from '../engine/index.js';
import { openLocalModels } from './engine-setup.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let runs = 0;
const runDir = () => join(root, `run-${++runs}`);

// The program: two calls (the second continues the first's chat), each logged with the prompt and completion ids the
// gateway returned; reward = the share of even ids among the sampled ones, so it depends only on what the model said.
// It asks for seed 7 on every call: the gateway must override it (else a group's members would all sample alike).
const PROGRAM = `
import { appendFileSync } from 'node:fs';
const env = process.env;
const [logDir, mode] = process.argv.slice(2);
async function chat(messages, maxTokens) {
  const r = await fetch(env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + env.OPENAI_API_KEY },
    body: JSON.stringify({ model: 'policy', messages, max_tokens: maxTokens, seed: 7, return_token_ids: true }),
  });
  if (!r.ok) throw new Error('chat ' + r.status + ': ' + (await r.text()));
  const body = await r.json();
  return { prompt: body.prompt_token_ids, completion: body.choices[0].token_ids, content: body.choices[0].message.content ?? '' };
}
const calls = [];
if (mode === 'one') {
  calls.push(await chat([{ role: 'user', content: 'pick' }], 1));
} else {
  const task = [{ role: 'user', content: 'task ' + env.RAGEN_SEED }];
  calls.push(await chat(task, 3));
  calls.push(await chat([...task, { role: 'assistant', content: calls[0].content }, { role: 'user', content: 'again' }], 3));
}
const ids = calls.flatMap((c) => c.completion);
const even = ids.filter((i) => i % 2 === 0).length;
const reward = mode === 'one' ? (even > 0 ? 1 : -1) : even / ids.length;
appendFileSync(logDir + '/' + env.RAGEN_EPISODE + '.json', JSON.stringify({ seed: Number(env.RAGEN_SEED), base: env.OPENAI_BASE_URL, calls, reward }) + '\\n');
const r = await fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward }) });
if (!r.ok) throw new Error('reward ' + r.status);
`;

interface LoggedCall {
  prompt: number[];
  completion: number[];
}
interface Logged {
  seed: number;
  /** The OPENAI_BASE_URL the program was given. */
  base: string;
  calls: LoggedCall[];
  reward: number;
}

/** A fresh log folder and the `agent` block running the program with it. */
function agentBlock(mode: 'two' | 'one'): { logDir: string; block: string } {
  const logDir = join(root, `log-${++runs}`);
  mkdirSync(logDir);
  return {
    logDir,
    block: `{command: "node ${join(root, 'agent.mjs')} ${logDir} ${mode}", timeoutS: 60, concurrency: 2}`,
  };
}

/** Every episode the program logged, by episode id. */
function logged(logDir: string): Map<string, Logged> {
  return new Map(
    readdirSync(logDir).map((f) => [
      f.replace(/\.json$/, ''),
      JSON.parse(readFileSync(join(logDir, f), 'utf8')) as Logged,
    ]),
  );
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-agent-train-'));
  model = await writeMicroModel(join(root, 'model'));
  writeFileSync(join(root, 'agent.mjs'), PROGRAM);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('ragen train on an agent program', () => {
  it('trains 2 steps through the gateway (metrics, rollouts, checkpoint, val/agent/success), and resume gives the same step 2', async () => {
    const config = (dir: string, block: string, valBlock: string) =>
      microConfig(model, dir, [
        `env.train=[{agent: ${block}, groups: 2, groupSize: 2}]`,
        `env.val=[{agent: ${valBlock}, groups: 2}]`,
        'algo.advEstimator=grpo',
        'trainer.valBeforeTrain=true',
        'trainer.valEvery=2',
        'trainer.collapse.every=1',
      ]);
    const a = agentBlock('two');
    const av = agentBlock('two');
    const full = await train({ config: config(runDir(), a.block, av.block) });
    const metrics = readMetricsFile(join(full.runDir, 'metrics.jsonl'));
    expect(metrics.map((m) => m.step)).toEqual([0, 1, 2]);
    for (const m of metrics.slice(1)) {
      expect(m['gateway/calls']).toBe(8); // 2 groups x 2 members x 2 calls
      expect([
        m['gateway/episodes_ok'],
        m['gateway/episodes_crashed'],
        m['gateway/episodes_timeout'],
        m['gateway/episodes_no_reward'],
        m['gateway/refused_calls'],
      ]).toEqual([4, 0, 0, 0, 0]);
      expect(m['gateway/calls_per_episode']).toBe(2);
      expect(Number.isFinite(m['actor/pg_loss'])).toBe(true);
      expect(m['train/agent/success']).toBeDefined();
    }
    // collapse diagnostics read agent episodes (one turn per call, empty observations): two groups, two prompts
    expect(Number.isFinite(metrics[1]!['collapse_first_turn_sample/mi_estimate'])).toBe(true);
    expect(metrics[0]!['val/agent/success']).toBeDefined();
    expect(metrics[2]!['val/agent/success']).toBeDefined();
    expect(full.summary.map((r) => r.tag)).toEqual(['agent']);
    expect(existsSync(join(full.runDir, 'checkpoints', 'step-2', 'config.json'))).toBe(true);

    // The program's reward is the one trained on: each rollout record's score is its logged reward.
    const eps = logged(a.logDir);
    const records = readFileSync(join(full.runDir, 'rollouts', 'step-1.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { score?: number; reward?: number; turns: unknown[] });
    expect(records.length).toBe(4);
    const rewards = [...eps]
      .filter(([id]) => id.startsWith('s1-'))
      .map(([, e]) => e.reward)
      .sort();
    expect(records.map((r) => r.score ?? r.reward).sort()).toEqual(rewards);
    expect(records.every((r) => r.turns.length === 2)).toBe(true);
    // Sampling seeds come from the step and the episode, not from the request's `seed: 7`: members of a group differ,
    // and step 2 samples afresh.
    const text = (prefix: string) =>
      [...eps].filter(([id]) => id.startsWith(prefix)).map(([, e]) => JSON.stringify(e.calls.map((c) => c.completion)));
    expect(new Set(text('s1-e0-g0-')).size).toBe(2);
    expect(text('s2-e0-g0-')).not.toEqual(text('s1-e0-g0-'));

    const dir = runDir();
    const b = agentBlock('two');
    const bv = agentBlock('two');
    expect((await train({ config: config(dir, b.block, bv.block), stopAfter: 1 })).lastStep).toBe(1);
    const resumed = await train({ resume: dir });
    expect(resumed.startStep).toBe(1);
    expect(deterministic(readMetricsFile(join(dir, 'metrics.jsonl')))).toEqual(deterministic(metrics));
    expect(readFileSync(join(dir, 'rollouts', 'step-2.jsonl'), 'utf8')).toBe(
      readFileSync(join(full.runDir, 'rollouts', 'step-2.jsonl'), 'utf8'),
    );
  }, 180_000);

  it("trains on exactly the ids the gateway sampled: every call's prompt + completion opens a row of the update", async () => {
    const a = agentBlock('two');
    const config = microConfig(model, runDir(), [
      `env.train=[{agent: ${a.block}, groups: 2, groupSize: 2}]`,
      'env.val=[]',
      'algo.advEstimator=grpo',
      'trainer.steps=1',
    ]);
    const models = await openLocalModels(config);
    const rows: number[][] = [];
    const backward = models.engine.backward.bind(models.engine);
    models.engine.backward = (batch, options, lossGrad) => {
      for (let b = 0; b < batch.B; b++)
        rows.push([...batch.ids.subarray(b * batch.T, b * batch.T + batch.lengths[b]!)]);
      return backward(batch, options, lossGrad);
    };
    try {
      await train({ config, models });
    } finally {
      models.engine.dispose();
    }
    const calls = [...logged(a.logDir).values()].flatMap((e) => e.calls);
    expect(calls.length).toBe(8);
    for (const c of calls) {
      const seq = [...c.prompt, ...c.completion];
      expect(
        rows.some((r) => r.length >= seq.length && seq.every((id, i) => r[i] === id)),
        `call ${JSON.stringify(seq)}`,
      ).toBe(true);
    }
    // and nothing else: every row is some call's prompt + completion, or a chain of them (the second call extends the
    // first)
    for (const r of rows)
      expect(
        calls.some(
          (c) =>
            c.prompt.length + c.completion.length === r.length &&
            [...c.prompt, ...c.completion].every((id, i) => r[i] === id),
        ),
      ).toBe(true);
  }, 120_000);

  it('mixes built-in env and agent entries in one step: one batch, per-tag metrics, agent groups seeded after the env groups', async () => {
    const a = agentBlock('two');
    const dir = runDir();
    const config = microConfig(model, dir, [
      `env.train=[{tag: SimpleSokoban, groups: 2, groupSize: 2}, {agent: ${a.block}, groups: 1, groupSize: 2}]`,
      'env.val=[]',
      'algo.advEstimator=grpo',
      'algo.filter.strategy=top_k',
      'algo.filter.value=1',
      'trainer.steps=2',
      'trainer.checkpointEvery=2',
    ]);
    await train({ config });
    const [m1, m2] = readMetricsFile(join(dir, 'metrics.jsonl'));
    for (const m of [m1!, m2!]) {
      expect(m['train/SimpleSokoban/success']).toBeDefined();
      expect(m['train/agent/success']).toBeDefined();
      expect(m['gateway/calls']).toBe(4);
    }
    // step k: env groups take seed.train + (k-1)*3 + {0, 1}, the agent group the next seed
    const seeds = [...logged(a.logDir)].map(([id, e]) => [id.slice(0, 2), e.seed]).sort();
    expect(seeds).toEqual([
      ['s1', config.seed.train + 2],
      ['s1', config.seed.train + 2],
      ['s2', config.seed.train + 5],
      ['s2', config.seed.train + 5],
    ]);
    type Rec = { env: string; seed: number; kept: boolean; turns: { tokens: number; token_advantages?: number[] }[] };
    const records = readFileSync(join(dir, 'rollouts', 'step-1.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec);
    // the joined batch's samples point at their own episodes: each turn (the filter keeps every group here) carries one
    // advantage per sampled token
    expect(records.every((r) => r.kept)).toBe(true);
    for (const r of records) for (const t of r.turns) expect(t.token_advantages?.length).toBe(t.tokens);
    expect(records.map((r) => [r.env, r.seed])).toEqual([
      ['SimpleSokoban', config.seed.train],
      ['SimpleSokoban', config.seed.train],
      ['SimpleSokoban', config.seed.train + 1],
      ['SimpleSokoban', config.seed.train + 1],
      ['agent', config.seed.train + 2],
      ['agent', config.seed.train + 2],
    ]);
  }, 120_000);

  it('scores failed episodes with failureReward, counts them by status, and says why on the console', async () => {
    writeFileSync(
      join(root, 'flaky.mjs'),
      `
if (process.env.RAGEN_EPISODE.endsWith('-m1')) { process.stderr.write('boom: the tool server is down\\n'); process.exit(3); }
await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });
`,
    );
    const dir = runDir();
    const block = `{command: "node ${join(root, 'flaky.mjs')}", timeoutS: 30, failureReward: -1}`;
    const config = microConfig(model, dir, [
      `env.train=[{agent: ${block}, groups: 2, groupSize: 2}]`,
      `env.val=[{agent: ${block}, groups: 2, groupSize: 2}]`,
      'trainer.valBeforeTrain=true',
      'trainer.valEvery=1',
      'algo.advEstimator=grpo',
      'trainer.steps=1',
      'logging.console=plain',
    ]);
    let printed = '';
    const stream = Object.assign(
      new (await import('node:stream')).Writable({ write: (c, _e, cb) => ((printed += String(c)), cb()) }),
      { isTTY: false },
    );
    await train({ config, stream });
    const m = readMetricsFile(join(dir, 'metrics.jsonl')).find(
      (r) => r['step'] === 1 && r['gateway/calls'] !== undefined,
    );
    // validation's failures are said too (before training and after step 1), not only a lower val/agent/success
    expect(
      printed.match(
        /validation: episode val-e0-g\d-m1: crashed \(exit 3\), reward -1; stderr: boom: the tool server is down \(and 1 more failed episode\(s\)\)/g,
      ),
    ).toHaveLength(2);
    expect([m!['gateway/episodes_ok'], m!['gateway/episodes_crashed'], m!['gateway/calls']]).toEqual([2, 2, 0]);
    expect(m!['train/reward_mean']).toBe(0); // two 1s and two failureReward -1s
    expect(printed).toMatch(
      /step 1: episode s1-e0-g\d-m1: crashed \(exit 3\), reward -1; stderr: boom: the tool server is down \(and 1 more failed episode\(s\) this step\)/,
    );
  }, 60_000);

  it('closes the gateway and drops its signal handlers when a step fails', async () => {
    const a = agentBlock('two');
    const config = microConfig(model, runDir(), [
      `env.train=[{agent: ${a.block}, groups: 1, groupSize: 2}]`,
      'env.val=[]',
      'algo.advEstimator=grpo',
      'trainer.miniBatchSize=2',
      'trainer.steps=1',
    ]);
    const models = await openLocalModels(config);
    models.engine.backward = () => Promise.reject(new Error('engine fault'));
    const listeners = () => [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const before = listeners();
    try {
      await expect(train({ config, models })).rejects.toThrow('engine fault');
    } finally {
      models.engine.dispose();
    }
    expect(listeners()).toEqual(before);
    const base = [...logged(a.logDir).values()][0]!.base;
    await expect(fetch(`${base}/models`)).rejects.toThrow(); // nothing listens there any more
  }, 60_000);

  it('moves the policy toward what the program rewards: rewarded tokens gain log-probability, penalised ones lose it', async () => {
    const a = agentBlock('one');
    const dir = runDir();
    const config = microConfig(model, dir, [
      `env.train=[{agent: ${a.block}, groups: 2, groupSize: 4}]`,
      'env.val=[]',
      'algo.advEstimator=grpo',
      'trainer.steps=2',
      'trainer.actorLr=1e-2',
      'trainer.miniBatchSize=8',
      'trainer.microBatchSize=8',
      'trainer.checkpointEvery=2',
    ]);
    await train({ config });
    const eps = [...logged(a.logDir).values()];
    const prompt = eps[0]!.calls[0]!.prompt; // one fixed prompt: every episode's first token follows it
    const rewarded = [...new Set(eps.filter((e) => e.reward > 0).map((e) => e.calls[0]!.completion[0]!))];
    const penalised = [...new Set(eps.filter((e) => e.reward < 0).map((e) => e.calls[0]!.completion[0]!))];
    expect(rewarded.length).toBeGreaterThan(0);
    expect(penalised.length).toBeGreaterThan(0);
    // log π(v | prompt) for each token v, measured through the engine (a teacher-forced forward)
    const logprobs = async (engine: LocalEngine, tokens: number[]): Promise<number[]> => {
      const batch = sequenceBatch(tokens.map((v) => [...prompt, v]));
      const out = await engine.forward(batch, { role: 'policy' });
      engine.dispose();
      return tokens.map((_, b) => out.logprobs[b * batch.T + prompt.length]!);
    };
    const tokens = [...rewarded, ...penalised];
    const before = await logprobs((await openLocalModels(config)).engine, tokens);
    const after = await logprobs((await openLocalModels(config, join(dir, 'checkpoints', 'step-2'))).engine, tokens);
    const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
    const delta = tokens.map((_, i) => after[i]! - before[i]!);
    const up = mean(delta.slice(0, rewarded.length));
    const down = mean(delta.slice(rewarded.length));
    expect(up).toBeGreaterThan(0.05);
    expect(down).toBeLessThan(-0.05);
  }, 120_000);
});
