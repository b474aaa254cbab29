import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { envSpec, resolveEnvConfig } from '../env/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { collate } from './collate.js';
import { agentConfig } from './config.js';
import { EnvGroups } from './env-groups.js';
import { computeMetrics } from './metrics.js';
import { randomPolicy } from './policies.js';
import { rollout, type Episode } from './rollout.js';
import { registerTestCorridor } from './testing.js';
import { episodeRecord } from './trajectories.js';

registerTestCorridor();

describe('EnvGroups', () => {
  it('lays out tags in contiguous blocks of groups, group members sharing a seed', async () => {
    const g = new EnvGroups({
      tags: [
        { env: 'TestCorridor', nGroups: 2 },
        { env: 'Bandit', nGroups: 1 },
      ],
      groupSize: 2,
      mode: 'val',
      seed: 123,
    });
    await g.reset();
    expect(g.slots.map((s) => [s.tag, s.group, s.member, s.seed])).toEqual([
      ['TestCorridor', 0, 0, 123],
      ['TestCorridor', 0, 1, 123],
      ['TestCorridor', 1, 0, 124],
      ['TestCorridor', 1, 1, 124],
      ['Bandit', 2, 0, 125],
      ['Bandit', 2, 1, 125],
    ]);
    expect(g.nGroups).toBe(3);
  });

  it('advances train seeds by the number of groups at each reset; an explicit base restarts the counter', () => {
    const g = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 4 }], groupSize: 1, mode: 'train', seed: 10000 });
    expect(g.nextSeeds()).toEqual([10000, 10001, 10002, 10003]);
    expect(g.nextSeeds()).toEqual([10004, 10005, 10006, 10007]);
    expect(g.nextSeeds(7)).toEqual([7, 8, 9, 10]);
    expect(g.nextSeeds()).toEqual([11, 12, 13, 14]);
    const v = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 2 }], groupSize: 1, mode: 'val', seed: 123 });
    expect(v.nextSeeds()).toEqual([123, 124]);
    expect(v.nextSeeds()).toEqual([123, 124]);
  });

  it('enforces the per-episode action cap; unknown names are invalid, not sent, not counted', async () => {
    const g = new EnvGroups({
      tags: [{ env: 'TestCorridor', nGroups: 1, config: { length: 20 }, maxActionsPerEpisode: 3 }],
      groupSize: 1,
      mode: 'val',
      seed: 0,
    });
    await g.reset();
    const slot = g.slots[0]!;
    const a = await g.step(slot, ['Fly', 'Right', 'Left']);
    expect(a.actions.map((x) => [x.action, x.valid, x.executed])).toEqual([
      ['Fly', false, false],
      ['Right', true, true],
      ['Left', true, true],
    ]);
    expect(g.actionsLeft(slot)).toBe(1);
    const b = await g.step(slot, ['Right', 'Right']);
    expect(b.actions.map((x) => x.skipped)).toEqual([false, true]);
    expect(b).toMatchObject({ truncated: true, terminated: false, capReached: true });
    expect(slot.done).toBe(true);
  });

  it('rejects bad layouts with errors that name the value', () => {
    expect(
      () => new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 0 }], groupSize: 1, mode: 'val', seed: 0 }),
    ).toThrow(/nGroups/);
    expect(
      () => new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 1 }], groupSize: 0, mode: 'val', seed: 0 }),
    ).toThrow(/groupSize/);
    expect(
      () => new EnvGroups({ tags: [{ env: 'TestCoridor', nGroups: 1 }], groupSize: 1, mode: 'val', seed: 0 }),
    ).toThrow(/Did you mean `TestCorridor`/);
    expect(() => agentConfig({ maxTurn: 3 } as never)).toThrow(/Did you mean `maxTurns`/);
    expect(() => agentConfig({ contextWindowMode: 'window' } as never)).toThrow(/contextWindowMode/);
    // a window does nothing in full mode (RAGEN ignored it silently): refused, as are windows below 1
    expect(() => agentConfig({ maxContextWindow: 2 })).toThrow(
      /`maxContextWindow` = 2: needs `contextWindowMode` = "limited_multi_turn" or "single_turn"/,
    );
    expect(() => agentConfig({ contextWindowMode: 'limited_multi_turn', maxContextWindow: 0 })).toThrow(
      /`maxContextWindow` = 0: Too small/,
    );
    expect(() => agentConfig({ contextWindowMode: 'limited_multi_turn', maxContextWindow: -1 })).toThrow(
      /`maxContextWindow` = -1/,
    );
    expect(agentConfig({ contextWindowMode: 'single_turn', maxContextWindow: 3 }).maxContextWindow).toBe(3);
    expect(agentConfig({ contextWindowMode: 'full', maxContextWindow: null }).maxContextWindow).toBe(null);
  });
});

function fakeEpisode(group: number, success: boolean, actions: { valid: boolean; effective: boolean }[]): Episode {
  return {
    index: 0,
    tag: 'T',
    group,
    member: 0,
    seed: group,
    turns: [
      {
        turn: 0,
        promptIds: [],
        response: '',
        formatError: success ? undefined : 'no <think> tag',
        loop: {
          observation: '',
          userText: '',
          think: '',
          answer: '',
          actions: actions.map((a) => ({ action: 'a', ...a, reward: 0, executed: a.valid, skipped: false })),
          droppedActions: 0,
        },
        reward: success ? 1 : 0,
        penalty: 0,
        info: { success, actionIsValid: true, actionIsEffective: true, boxes: success ? 2 : 0 },
        tokens: [1, 2, 3, 4],
        logprobs: [0, 0, 0, 0],
        finishReason: 'stop',
      },
    ],
    success,
    envReturn: success ? 1 : 0,
    score: success ? 1 : 0,
    numActions: actions.filter((a) => a.valid).length,
    endReason: 'terminated',
    loop: { system: '', contextTruncations: group === 0 ? 2 : 0, finalObservation: '' },
  };
}

describe('computeMetrics', () => {
  it('computes success, pass@k over groups, validity, effectiveness, format errors per tag', () => {
    const eps = [
      fakeEpisode(0, true, [{ valid: true, effective: true }]),
      fakeEpisode(0, false, [
        { valid: false, effective: false },
        { valid: true, effective: false },
      ]),
      fakeEpisode(1, false, []),
      fakeEpisode(1, false, [{ valid: true, effective: true }]),
    ];
    const m = computeMetrics(eps, 2)['T']!;
    expect(m['success']).toBe(0.25);
    expect(m['pass@2']).toBe(0.5);
    expect(m['action_valid_ratio']).toBeCloseTo((1 + 0.5 + 0 + 1) / 4, 12);
    expect(m['action_effective_ratio']).toBeCloseTo((1 + 0 + 0 + 1) / 4, 12);
    expect(m['format_error_rate']).toBe(0.75);
    expect(m['context_truncations']).toBe(1);
    expect(m['response_length']).toBe(4);
    expect(m['info/boxes']).toBe(0.5);
  });
});

describe('collate and trajectories', () => {
  it('pads samples into (B, T) row-major arrays with group keys, and writes OpenAI messages', async () => {
    const tok = loadTokenizer(tinyTokenizerDir());
    const cfg = agentConfig({ maxTurns: 3, maxNewTokens: 30 });
    const groups = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 2 }], groupSize: 2, mode: 'val', seed: 5 });
    const batch = await rollout({ groups, policy: randomPolicy(tok, cfg, 3), tokenizer: tok, agent: cfg });
    const b = collate(batch.samples, tok.padTokenId);
    expect(b.B).toBe(4);
    expect(b.T).toBe(Math.max(...batch.samples.map((s) => s.ids.length)));
    batch.samples.forEach((s, i) => {
      expect(Array.from(b.ids.subarray(i * b.T, i * b.T + s.ids.length))).toEqual(s.ids);
      expect(Array.from(b.lossMask.subarray(i * b.T, (i + 1) * b.T)).reduce((x, y) => x + y, 0)).toBe(
        s.lossMask.reduce((x, y) => x + y, 0),
      );
      expect(b.attentionMask[i * b.T + s.ids.length - 1]).toBe(1);
      if (s.ids.length < b.T) expect(b.attentionMask[i * b.T + s.ids.length]).toBe(0);
    });
    expect(b.groupIds).toEqual(['TestCorridor/0', 'TestCorridor/0', 'TestCorridor/1', 'TestCorridor/1']);
    expect(() => collate(batch.samples, 0, 3)).toThrow(/more than T = 3/);
    const rec = episodeRecord(batch.episodes[0]!, cfg);
    expect(rec.messages[0]!.role).toBe('system');
    expect(rec.messages.filter((m) => m.role === 'assistant')).toHaveLength(rec.turns.length);
    expect(rec.messages[2]!.content.startsWith('<think>')).toBe(true);
    expect(rec).toMatchObject({ env: 'TestCorridor', seed: 5, group: 0, step: null, kept: null });
  });
});

describe('EnvGroups and chance after the start', () => {
  it('with resetOptions drawSeed = member, group members share the Bandit arms but draw payouts separately', async () => {
    const g = new EnvGroups({
      tags: [{ env: 'Bandit', nGroups: 1, resetOptions: (m) => ({ drawSeed: m }) }],
      groupSize: 16,
      mode: 'val',
      seed: 3,
    });
    await g.reset();
    const names = g.slots.map((s) => s.env.actionNames!.join(','));
    expect(new Set(names).size).toBe(1);
    const high = envSpec('Bandit').solve!(resolveEnvConfig('Bandit'), 3)![0]!;
    const rewards = await Promise.all(g.slots.map(async (s) => (await g.step(s, [high])).reward));
    expect(new Set(rewards).size).toBe(2); // some members won 1.0, others 0
    // without it, every member replays the same draw
    const same = new EnvGroups({ tags: [{ env: 'Bandit', nGroups: 1 }], groupSize: 8, mode: 'val', seed: 3 });
    await same.reset();
    const r2 = await Promise.all(same.slots.map(async (s) => (await same.step(s, [high])).reward));
    expect(new Set(r2).size).toBe(1);
  });
});
