import '../envs/index.js'; // the built-in environments
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EnvGroups } from '../agent/index.js';
import {
  checkEnv,
  envSpec,
  invalidInfo,
  makeEnv,
  resolveEnvConfig,
  wrapEnv,
  type Env,
  type StepResult,
  type WrapOptions,
} from './index.js';
import { EnvServer, RemoteEnv } from './remote/index.js';
import { EpisodeRecorder, FormatPenalty, ObservationTruncation, RewardScale } from './layered-wrappers.js';

const dir = mkdtempSync(join(tmpdir(), 'ragen-wrappers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Pays `rewards[t]` at step t; the action "bad" is invalid (reward 0, nothing happens); ends after the last reward. */
function scripted(rewards: number[], observation = 'obs'): Env {
  let t = 0;
  return {
    instruction: '',
    legend: '',
    actionNames: undefined,
    reset: () => ((t = 0), { observation, info: invalidInfo('', { actionIsValid: true }) }),
    step: (action: string): StepResult => {
      if (action === 'bad')
        return { observation, reward: 0, terminated: false, truncated: false, info: invalidInfo('bad action') };
      const reward = rewards[t++]!;
      return {
        observation: `${observation}${t}`,
        reward,
        terminated: t === rewards.length,
        truncated: false,
        info: { success: t === rewards.length, actionIsValid: true, actionIsEffective: true },
      };
    },
    render: () => `t=${t}`,
    close: () => {},
  };
}

async function play(env: Env, actions: string[]): Promise<StepResult[]> {
  await env.reset({ seed: 0 });
  const out: StepResult[] = [];
  for (const a of actions) out.push(await env.step(a));
  return out;
}

describe('layered wrappers', () => {
  it('RewardScale computes clip(reward * scale + shift) and keeps the raw reward in info', async () => {
    const r = await play(new RewardScale(scripted([1, -2, 0.5]), { scale: 2, shift: 0.5, clip: [-3, 2] }), [
      'a',
      'b',
      'c',
    ]);
    expect(r.map((x) => x.reward)).toEqual([2, -3, 1.5]); // 2.5 clipped to 2; -3.5 clipped to -3; 1.5
    expect(r.map((x) => x.info.rawReward)).toEqual([1, -2, 0.5]);
  });

  it('FormatPenalty adds the penalty to invalid steps only', async () => {
    const r = await play(new FormatPenalty(scripted([1, 1]), -0.1), ['bad', 'a', 'bad', 'a']);
    expect(r.map((x) => x.reward)).toEqual([-0.1, 1, -0.1, 1]);
    expect(r[0]!.info.formatPenalty).toBe(-0.1);
  });

  it('ObservationTruncation keeps the head or the tail within a character or token budget', async () => {
    const long = 'one two three four five six';
    const head = await new ObservationTruncation(scripted([1], long), { maxChars: 7 }).reset({ seed: 0 });
    expect(head.observation).toBe(`one two\n[... ${long.length - 7} characters cut]`);
    expect(head.info.observationTruncated).toBe(long.length - 7);
    const words = (s: string) => s.split(' ').filter((w) => w !== '').length;
    const tail = await new ObservationTruncation(scripted([1], long), {
      maxTokens: 2,
      countTokens: words,
      keep: 'tail',
    }).reset({ seed: 0 });
    expect(tail.observation.endsWith('five six')).toBe(true);
    expect(words(tail.observation.split('\n')[1]!)).toBe(2);
    const short = await new ObservationTruncation(scripted([1], 'ok'), { maxChars: 7 }).reset({ seed: 0 });
    expect(short).toEqual({
      observation: 'ok',
      info: expect.not.objectContaining({ observationTruncated: expect.anything() }),
    });
  });

  it('EpisodeRecorder writes one JSON line per episode, finished or interrupted', async () => {
    const path = join(dir, 'sub', 'episodes.jsonl');
    const env = new EpisodeRecorder(scripted([1, 2]), path);
    await play(env, ['a', 'b']); // finished
    await play(env, ['a']); // interrupted by close
    await env.close();
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.finished, l.steps.length, l.episodeReturn])).toEqual([
      [true, 2, 3],
      [false, 1, 1],
    ]);
    expect(lines[0].steps[1]).toMatchObject({ action: 'b', reward: 2, terminated: true });
  });

  it('wrapEnv stacks in the documented order: the penalty is not scaled, statistics and recordings see final rewards', async () => {
    const path = join(dir, 'order.jsonl');
    const env = wrapEnv(scripted([1, 1, 1, 1]), {
      maxActions: 3,
      rewardScale: { scale: 10 },
      formatPenalty: -0.1,
      episodeStatistics: true,
      recordEpisodes: path,
    });
    const r = await play(env, ['bad', 'a', 'a']);
    expect(r.map((x) => x.reward)).toEqual([-0.1, 10, 10]);
    expect(r[2]!.truncated).toBe(true); // TimeLimit counts the invalid step too
    expect(r[2]!.info.episodeReturn).toBeCloseTo(19.9);
    expect(JSON.parse(readFileSync(path, 'utf8').trim()).episodeReturn).toBeCloseTo(19.9);
    await expect(async () => env.step('a')).rejects.toThrow(/after the episode ended/);
  });
});

describe('EnvGroups tag wrappers', () => {
  it('stack the given wrappers on every env of the tag', async () => {
    const make = (wrappers?: WrapOptions) =>
      new EnvGroups({
        tags: [{ env: 'SimpleSokoban', nGroups: 1, ...(wrappers ? { wrappers } : {}) }],
        groupSize: 2,
        mode: 'train',
        seed: 5,
      });
    const plain = make();
    const scaled = make({ rewardScale: { scale: 10 } });
    await plain.reset();
    await scaled.reset();
    const a = await plain.step(plain.slots[0]!, ['Up', 'Left']);
    const b = await scaled.step(scaled.slots[0]!, ['Up', 'Left']);
    expect(a.reward).not.toBe(0);
    expect(b.reward).toBeCloseTo(10 * a.reward);
  });
});

describe('checkEnv through any stack', () => {
  const stack = (tag: string): WrapOptions => ({
    maxActions: 7,
    rewardScale: { scale: 0.5, shift: 0.1 },
    formatPenalty: -0.1,
    observation: { maxChars: 60 },
    episodeStatistics: true,
    recordEpisodes: join(dir, `${tag}.jsonl`),
  });
  const config = resolveEnvConfig('SimpleSokoban');
  const solve = (seed: number, mode: 'train' | 'val') => envSpec('SimpleSokoban').solve!(config, seed, mode);

  it('passes on a local env with every wrapper', async () => {
    await checkEnv(wrapEnv(makeEnv('SimpleSokoban'), stack('local')), {
      seeds: [0, 1],
      solve,
      make: () => wrapEnv(makeEnv('SimpleSokoban'), stack('local2')),
    });
  });

  it('passes on a remote env with every wrapper', async () => {
    const server = new EnvServer({ envIds: ['SimpleSokoban'], port: 0, log: () => {} });
    const url = `ws://127.0.0.1:${await server.listen()}/SimpleSokoban`;
    try {
      await checkEnv(wrapEnv(new RemoteEnv(url), stack('remote')), {
        seeds: [0, 1],
        solve,
        make: () => wrapEnv(new RemoteEnv(url), stack('remote2')),
      });
    } finally {
      await server.close();
    }
  });
});
