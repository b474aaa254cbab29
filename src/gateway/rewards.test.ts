// Where an episode's reward comes from: a command's exit record (its last stdout line `{"reward": x}`), the HTTP
// report winning over it, and a task verifier that scores the transcript (a reported reward is then ignored and
// counted), a verifier that throws scoring the failure reward.
import '../envs/index.js'; // the built-in environments
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentProgram } from '../agent/index.js';
import { agentRollout } from './agent-rollout.js';
import type { AgentContext } from './in-process.js';
import { exitRecordReward, runAgentEpisode, type AgentTask, type TranscriptCall } from './runner.js';
import type { Gateway } from './server.js';
import { tinyGateway } from './testing.js';

const dir = mkdtempSync(join(os.tmpdir(), 'ragen-rewards-'));
let gateway: Gateway;
const task = (episodeId: string, seed = 0, group = 0) => ({ episodeId, seed, group });
const tools = [
  {
    type: 'function' as const,
    function: { name: 'calc', parameters: { type: 'object', properties: { expr: { type: 'string' } } } },
  },
];

beforeAll(async () => {
  gateway = await tinyGateway({ maxTokens: 8 });
});
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('exit records', () => {
  it('reads the last non-empty stdout line as {"reward": x}, and nothing else', () => {
    expect(exitRecordReward('working...\n{"reward": 0.5, "note": "x"}\n\n')).toBe(0.5);
    expect(exitRecordReward('{"reward": 1}\ndone\n')).toBeUndefined();
    expect(exitRecordReward('{"reward": "1"}')).toBeUndefined();
    expect(exitRecordReward('{"reward": 1')).toBeUndefined();
    expect(exitRecordReward('[{"reward": 1}]')).toBeUndefined();
    expect(exitRecordReward('')).toBeUndefined();
  });

  it("takes a program's exit record as its reward; an HTTP report wins; a crash ignores it", async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n'); // more than the bounded stdout keeps
    writeFileSync(join(dir, 'lines.txt'), `${lines}\n`);
    const exit = await runAgentEpisode(
      gateway,
      { command: `cat lines.txt; echo '{"reward": 0.625}'`, cwd: dir, timeoutS: 30 },
      task('exit-1'),
    );
    expect([exit.status, exit.reward, exit.rewardSource]).toEqual(['ok', 0.625, 'exit']);
    const both = await runAgentEpisode(
      gateway,
      {
        command: `node -e "fetch(process.env.RAGEN_REWARD_URL, {method: 'POST', body: JSON.stringify({reward: 0.25})}).then(() => console.log(JSON.stringify({reward: 9})))"`,
        timeoutS: 30,
      },
      task('exit-2'),
    );
    expect([both.status, both.reward, both.rewardSource]).toEqual(['ok', 0.25, 'http']);
    const crash = await runAgentEpisode(
      gateway,
      { command: `echo '{"reward": 1}'; exit 3`, timeoutS: 30 },
      task('exit-3'),
      { failureReward: -1 },
    );
    expect([crash.status, crash.reward, crash.exitCode]).toEqual(['crashed', -1, 3]);
    const none = await runAgentEpisode(gateway, { command: `echo '{"score": 1}'`, timeoutS: 30 }, task('exit-4'));
    expect(none.status).toBe('no_reward');
  }, 60_000);
});

describe('task verifiers', () => {
  it('scores the episode from its task and transcript, ignoring (and counting) a reward the program reported', async () => {
    const seen: { task: AgentTask; transcript: TranscriptCall[] }[] = [];
    const verifier = async (t: AgentTask, transcript: TranscriptCall[]) => {
      seen.push({ task: t, transcript });
      return transcript.length + t.seed / 100;
    };
    const agent = async (ctx: AgentContext) => {
      const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
      await client.chat.completions.create({
        model: 'p',
        messages: [{ role: 'user', content: 'first' }],
        tools,
        max_tokens: 4,
      });
      await client.chat.completions.create({
        model: 'p',
        messages: [{ role: 'user', content: 'second' }],
        max_tokens: 4,
      });
      await fetch(ctx.rewardUrl, { method: 'POST', body: JSON.stringify({ reward: -3 }) });
    };
    const lines: string[] = [];
    const out = await runAgentEpisode(gateway, { agent, verifier, timeoutS: 30 }, task('ver-1', 7, 1), {
      log: (l) => lines.push(l),
    });
    expect([out.status, out.reward, out.rewardSource, out.ignoredReward]).toEqual(['ok', 2.07, 'verifier', -3]);
    expect(seen[0]!.task).toEqual({ episodeId: 'ver-1', seed: 7, group: 1 });
    expect(seen[0]!.transcript.map((c) => [c.messages, c.tools])).toEqual([
      [[{ role: 'user', content: 'first' }], tools],
      [[{ role: 'user', content: 'second' }], null],
    ]);
    expect(seen[0]!.transcript.map((c) => c.completion)).toEqual(out.log.calls.map((c) => c.text));
    expect(lines.join('\n')).toMatch(/ver-1: the program reported reward -3, ignored: the verifier scores it 2\.07/);

    // A command program's exit record is ignored the same way, and the batch counts the overridden episodes.
    writeFileSync(
      join(dir, 'verify.mjs'),
      `export default (task, transcript) => task.group * 10 + transcript.length;\n`,
    );
    writeFileSync(
      join(dir, 'agent.mjs'),
      `await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }) });
if (process.env.RAGEN_GROUP === '1') console.log(JSON.stringify({ reward: 5 }));\n`,
    );
    const program = agentProgram({
      command: 'node agent.mjs',
      verifier: { module: './verify.mjs' },
      cwd: dir,
      timeoutS: 30,
    });
    const { batch, outcomes } = await agentRollout(gateway, program, {
      tag: 'Ver',
      groups: 2,
      groupSize: 1,
      seedBase: 0,
      idPrefix: 'ver',
    });
    expect(outcomes.map((o) => [o.status, o.reward, o.ignoredReward])).toEqual([
      ['ok', 1, undefined],
      ['ok', 11, 5],
    ]);
    expect(batch.episodes.map((e) => e.score)).toEqual([1, 11]);
    expect(batch.metrics['Ver']!['info/reported_reward_ignored']).toBe(0.5);
  }, 60_000);

  it('scores the failure reward with a log line when the verifier throws or returns no number, and skips it for a crash', async () => {
    const lines: string[] = [];
    const log = (l: string) => lines.push(l);
    const agent = async () => 1;
    const threw = await runAgentEpisode(
      gateway,
      {
        agent,
        verifier: () => {
          throw new Error('verifier bug 7');
        },
        timeoutS: 30,
      },
      task('vbad-1'),
      { failureReward: -1, log },
    );
    expect([threw.status, threw.reward, threw.rewardSource]).toEqual(['no_reward', -1, null]);
    const rejected = await runAgentEpisode(
      gateway,
      { agent, verifier: async () => Promise.reject(new Error('async verifier bug')), timeoutS: 30 },
      task('vbad-2'),
      { log },
    );
    expect([rejected.status, rejected.reward]).toEqual(['no_reward', 0]);
    const nan = await runAgentEpisode(gateway, { agent, verifier: () => Infinity, timeoutS: 30 }, task('vbad-3'), {
      log,
    });
    expect(nan.status).toBe('no_reward');
    let called = false;
    const crash = await runAgentEpisode(
      gateway,
      {
        agent: async () => {
          throw new Error('x');
        },
        verifier: () => ((called = true), 1),
        timeoutS: 30,
      },
      task('vbad-4'),
      { log },
    );
    expect([crash.status, called]).toEqual(['crashed', false]);
    const text = lines.join('\n');
    expect(text).toMatch(/vbad-1: the verifier failed \(it threw Error: verifier bug 7\), reward -1/);
    expect(text).toMatch(/vbad-2: the verifier failed \(it threw Error: async verifier bug\)/);
    expect(text).toMatch(/vbad-3: the verifier failed \(it returned Infinity, not a finite number\)/);
  }, 60_000);
});
