// In-process agents (an exported async function per episode) against the gateway over ragen-tiny: the reward
// returned or reported, a throw, a run past the budget (abandoned, its late calls 404), a bad return value, the
// concurrency bound, modules named in the config, and errors it leaves unhandled (in a child trainer process).
import '../envs/index.js'; // the built-in environments
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentProgram } from '../agent/index.js';
import { ConfigError } from '../util/index.js';
import { agentRollout } from './agent-rollout.js';
import type { AgentContext } from './in-process.js';
import { runAgentEpisode, runAgentEpisodes } from './runner.js';
import type { Gateway } from './server.js';
import { tinyGateway } from './testing.js';

const dir = mkdtempSync(join(os.tmpdir(), 'ragen-in-process-'));
let gateway: Gateway;

beforeAll(async () => {
  gateway = await tinyGateway({ maxTokens: 8 });
});
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

const ask = (ctx: AgentContext, content = 'hi') =>
  new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 }).chat.completions.create(
    { model: 'p', messages: [{ role: 'user', content }], max_tokens: 4 },
    { signal: ctx.signal },
  );
const postReward = (ctx: AgentContext, reward: number) =>
  fetch(ctx.rewardUrl, { method: 'POST', body: JSON.stringify({ reward }) });
const task = (episodeId: string, seed = 0, group = 0) => ({ episodeId, seed, group });

describe('in-process agents', () => {
  it('takes the returned number or {reward}, and a reported reward over the returned one', async () => {
    const seen: Omit<AgentContext, 'signal'>[] = [];
    const num = await runAgentEpisode(
      gateway,
      {
        agent: async (ctx: AgentContext) => {
          const { signal: _s, ...rest } = ctx;
          seen.push(rest);
          await ask(ctx);
          return ctx.seed / 10 + ctx.group;
        },
        timeoutS: 30,
      },
      task('ip-num', 3, 2),
    );
    expect([num.status, num.rewardSource, num.log.calls.length]).toEqual(['ok', 'return', 1]);
    expect(num.reward).toBeCloseTo(2.3, 10);
    expect(seen[0]).toMatchObject({ seed: 3, group: 2, episodeId: 'ip-num', apiKey: expect.any(String) });
    expect(seen[0]!.baseUrl).toMatch(/\/episodes\/[\w-]{32}\/v1$/); // the episode's secret, not its id
    const obj = await runAgentEpisode(gateway, { agent: async () => ({ reward: 0.25 }), timeoutS: 30 }, task('ip-obj'));
    expect([obj.status, obj.reward, obj.rewardSource]).toEqual(['ok', 0.25, 'return']);
    const both = await runAgentEpisode(
      gateway,
      {
        agent: async (ctx: AgentContext) => {
          await postReward(ctx, 0.75);
          return 5;
        },
        timeoutS: 30,
      },
      task('ip-both'),
    );
    expect([both.status, both.reward, both.rewardSource]).toEqual(['ok', 0.75, 'http']);
  }, 30_000);

  it('scores a throwing agent `crashed` and a non-numeric return `no_reward`, with log lines naming why', async () => {
    const lines: string[] = [];
    const log = (l: string) => lines.push(l);
    const threw = await runAgentEpisode(
      gateway,
      {
        agent: async (ctx: AgentContext) => {
          await ask(ctx);
          await postReward(ctx, 1);
          throw new Error('agent bug 42');
        },
        timeoutS: 30,
      },
      task('ip-throw'),
      { failureReward: -1, log },
    );
    expect([threw.status, threw.reward, threw.log.reward, threw.log.calls.length]).toEqual(['crashed', -1, 1, 1]);
    expect(threw.stderrTail).toMatch(/agent bug 42/);
    const sync = await runAgentEpisode(
      gateway,
      {
        agent: () => {
          throw new TypeError('sync bug');
        },
        timeoutS: 30,
      },
      task('ip-sync'),
      { log },
    );
    expect([sync.status, sync.reward]).toEqual(['crashed', 0]);
    const bad = await runAgentEpisode(
      gateway,
      { agent: async () => ({ score: 'high' }), timeoutS: 30 },
      task('ip-bad'),
      { failureReward: -1, log },
    );
    expect([bad.status, bad.reward, bad.rewardSource]).toEqual(['no_reward', -1, null]);
    const nan = await runAgentEpisode(gateway, { agent: async () => NaN, timeoutS: 30 }, task('ip-nan'), { log });
    expect(nan.status).toBe('no_reward');
    expect(lines.join('\n')).toMatch(/ip-throw: crashed.*agent bug 42/);
    expect(lines.join('\n')).toMatch(/ip-bad: the agent returned \{"score":"high"\}, not a finite number/);
    expect(lines.join('\n')).toMatch(/ip-nan: the agent returned NaN/);
  }, 30_000);

  it('abandons an agent that ignores its signal at timeoutS: `timeout`, its signal aborted, its later calls 404', async () => {
    let aborted = false;
    let late: unknown;
    let release!: () => void;
    const lateDone = new Promise<void>((r) => (release = r));
    const t0 = Date.now();
    const out = await runAgentEpisode(
      gateway,
      {
        agent: async (ctx: AgentContext) => {
          ctx.signal.addEventListener('abort', () => (aborted = true));
          await new Promise((r) => setTimeout(r, 1200)); // ignores the signal
          const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
          late = await client.chat.completions
            .create({ model: 'p', messages: [{ role: 'user', content: 'late' }], max_tokens: 2 })
            .catch((e: { status?: number }) => e.status);
          release();
          return 1;
        },
        timeoutS: 0.5,
      },
      task('ip-hang'),
      { failureReward: -2 },
    );
    expect(Date.now() - t0).toBeLessThan(1100);
    expect([out.status, out.reward, aborted]).toEqual(['timeout', -2, true]);
    await lateDone;
    expect(late).toBe(404);
  }, 30_000);

  it('runs at most `concurrency` agent functions at once', async () => {
    let running = 0;
    let most = 0;
    const agent = async (ctx: AgentContext) => {
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, 50));
      running--;
      return ctx.seed;
    };
    const outs = await runAgentEpisodes(
      gateway,
      { agent, timeoutS: 30 },
      Array.from({ length: 6 }, (_, i) => task(`ip-c${i}`, i)),
      { concurrency: 2 },
    );
    expect(outs.map((o) => o.reward)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  }, 30_000);

  it('loads `module`/`export` relative to `cwd` when the rollout starts, and names a missing file or export', async () => {
    writeFileSync(
      join(dir, 'agent.mjs'),
      `export async function solve(ctx) {
  const r = await fetch(ctx.baseUrl + '/chat/completions', { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 3 }) });
  return r.status === 200 ? ctx.group + 1 : -5;
}
export const notAFunction = 3;
`,
    );
    const program = agentProgram({ module: './agent.mjs', export: 'solve', cwd: dir, timeoutS: 30 });
    const { batch, outcomes } = await agentRollout(gateway, program, {
      tag: 'InProc',
      groups: 2,
      groupSize: 2,
      seedBase: 0,
      idPrefix: 'mod',
    });
    expect(outcomes.map((o) => [o.status, o.reward, o.log.calls.length])).toEqual([
      ['ok', 1, 1],
      ['ok', 1, 1],
      ['ok', 2, 1],
      ['ok', 2, 1],
    ]);
    expect(batch.samples).toHaveLength(4);
    const rollout = (block: Record<string, unknown>) =>
      agentRollout(gateway, agentProgram({ cwd: dir, ...block }), {
        tag: 'X',
        groups: 1,
        groupSize: 1,
        seedBase: 0,
        idPrefix: `bad${Math.random()}`.replace('0.', ''),
      });
    await expect(rollout({ module: './nope.mjs' })).rejects.toThrow(ConfigError);
    await expect(rollout({ module: './nope.mjs' })).rejects.toThrow(
      /`agent\.module` = "\.\/nope\.mjs" does not exist \(looked for .*nope\.mjs/,
    );
    await expect(rollout({ module: './agent.mjs', export: 'notAFunction' })).rejects.toThrow(
      /no exported function `notAFunction` \(its function exports: solve\)/,
    );
    await expect(
      rollout({ module: './agent.mjs', export: 'solve', verifier: { module: './agent.mjs', export: 'verify' } }),
    ).rejects.toThrow(/`agent\.verifier\.module`.*no exported function `verify`/);
  }, 30_000);

  it('keeps the trainer alive when an agent leaves errors unhandled, and still ends it on its own unhandled rejection', () => {
    const runner = join(import.meta.dirname, 'runner.ts');
    const script = (tail: string) => {
      const file = join(dir, `trainer-${Math.random().toString(36).slice(2)}.mts`);
      writeFileSync(
        file,
        `import { runAgentEpisode } from ${JSON.stringify(runner)};
const gateway = { open: () => ({ baseUrl: 'http://127.0.0.1:9/v1', rewardUrl: 'http://127.0.0.1:9/r' }), finish: () => ({ id: 'e', calls: [], reward: undefined, refusedCalls: 0 }) };
const agent = async () => {
  Promise.reject(new Error('floating rejection'));
  setTimeout(() => { throw new Error('timer throw'); }, 5);
  await new Promise((r) => setTimeout(r, 100));
  return 0.5;
};
const out = await runAgentEpisode(gateway as never, { agent, timeoutS: 10 }, { episodeId: 'e1', seed: 0, group: 0 }, { log: (l) => console.log('LOG ' + l) });
console.log('OUT ' + out.status + ' ' + out.reward);
${tail}
`,
      );
      const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
      return spawnSync(tsx, [file], { encoding: 'utf8', timeout: 60_000 });
    };
    const ok = script('');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/LOG episode e1: .*unhandled.*floating rejection/);
    expect(ok.stdout).toMatch(/LOG episode e1: .*threw outside its promise.*timer throw/);
    expect(ok.stdout).toMatch(/OUT ok 0\.5/);
    const own = script(`Promise.reject(new Error('trainer bug'));\nsetTimeout(() => console.log('still alive'), 300);`);
    expect(own.status).toBe(1);
    expect(own.stderr).toMatch(/trainer bug/);
    expect(own.stdout).not.toMatch(/still alive/);
  }, 60_000);
});
