import '../envs/index.js'; // the built-in environments
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentConfig, EnvGroups, episodeRecord, randomPolicy, rollout, writeEpisodeRecords } from '../agent/index.js';
import { registerTestCorridor } from '../agent/testing.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import type { TokenBatch } from '../agent/index.js';
import { episodeRecords, tokenAdvantages, turnAdvantages } from './rollout-records.js';

registerTestCorridor();

/** Every key of a JSON value, nested ones as `a.b`, array entries merged. */
function keyPaths(x: unknown, prefix = ''): string[] {
  if (Array.isArray(x)) return [...new Set(x.flatMap((v) => keyPaths(v, prefix)))];
  if (x === null || typeof x !== 'object') return [];
  return Object.entries(x).flatMap(([k, v]) => [`${prefix}${k}`, ...keyPaths(v, `${prefix}${k}.`)]);
}

describe('episode records on disk', () => {
  it('rollouts/step-N.jsonl and `ragen eval --out` write the same snake_case record for the same episode', async () => {
    const tok = loadTokenizer(tinyTokenizerDir());
    const cfg = agentConfig({ maxTurns: 3, maxNewTokens: 20 });
    const groups = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 2 }], groupSize: 2, mode: 'val', seed: 7 });
    const { episodes } = await rollout({ groups, policy: randomPolicy(tok, cfg, 1), tokenizer: tok, agent: cfg });
    const advantages = new Map([[0, new Map([[0, 0.5]])]]);
    const dir = mkdtempSync(join(tmpdir(), 'ragen-records-'));
    writeEpisodeRecords(join(dir, 'step-3.jsonl'), episodeRecords(3, episodes, new Set([0, 1]), advantages, null, cfg));
    writeEpisodeRecords(
      join(dir, 'eval.jsonl'),
      episodes.map((e) => episodeRecord(e, cfg)),
    );
    const read = (f: string) =>
      readFileSync(join(dir, f), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const [train, val] = [read('step-3.jsonl'), read('eval.jsonl')];
    expect(train).toHaveLength(4);
    expect(val).toHaveLength(4);
    for (let i = 0; i < 4; i++) {
      expect(keyPaths(train[i])).toEqual(keyPaths(val[i]));
      for (const k of keyPaths(train[i])) expect(k, 'keys are snake_case').toMatch(/^[a-z0-9_.]+$/);
      // Only the training fields differ: the step, the filter's verdict, the advantages.
      const strip = (r: Record<string, unknown>) => ({
        ...r,
        step: null,
        kept: null,
        turns: (r.turns as object[]).map((t) => ({ ...t, advantage: null, token_text: null, token_advantages: null })),
      });
      expect(strip(train[i]!)).toEqual(strip(val[i]!));
    }
    expect(train[0]).toMatchObject({ step: 3, kept: true, end_reason: episodes[0]!.endReason, env: 'TestCorridor' });
    expect((train[0]!.turns as { advantage: number | null }[]).map((t) => t.advantage)).toEqual(
      episodes[0]!.turns.map((_, k) => (k === 0 ? 0.5 : null)),
    );
    expect(train[2]).toMatchObject({ kept: false });
    expect(val[0]).toMatchObject({ step: null, kept: null, end_reason: episodes[0]!.endReason });
  });
});

describe('per-token advantages in rollout records', () => {
  it("carries each sampled token's text and advantage when the trained tokens are the sampled ones, and nothing otherwise", async () => {
    const tok = loadTokenizer(tinyTokenizerDir());
    const cfg = agentConfig({ maxTurns: 1, maxNewTokens: 12 });
    const groups = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 2 }], groupSize: 1, mode: 'val', seed: 3 });
    const { episodes } = await rollout({ groups, policy: randomPolicy(tok, cfg, 2), tokenizer: tok, agent: cfg });
    const [e0, e1] = [episodes[0]!, episodes[1]!];
    const sampled0 = e0.turns[0]!.tokens;
    const sampled1 = e1.turns[0]!.tokens;
    // Two rows: row 0 trains episode 0's sampled tokens after a 2-token prompt; row 1 trains other ids for episode 1.
    const T = 2 + Math.max(sampled0.length, sampled1.length);
    const ids = new Int32Array(2 * T),
      lossMask = new Uint8Array(2 * T),
      turnIds = new Int32Array(2 * T).fill(-1);
    const adv = new Float32Array(2 * T);
    sampled0.forEach((id, i) => {
      ids[2 + i] = id;
      lossMask[2 + i] = 1;
      turnIds[2 + i] = 0;
      adv[2 + i] = i * 0.25 - 1;
    });
    sampled1.forEach((id, i) => {
      ids[T + 2 + i] = id + 1;
      lossMask[T + 2 + i] = 1;
      turnIds[T + 2 + i] = 0;
      adv[T + 2 + i] = 1;
    });
    const tokens = {
      B: 2,
      T,
      ids,
      lossMask,
      turnIds,
      episodeIds: Int32Array.from([e0.index, e1.index]),
    } as unknown as TokenBatch;
    const records = episodeRecords(1, episodes, new Set([e0.index, e1.index]), turnAdvantages(tokens, adv), null, cfg, {
      tokens: tokenAdvantages(tokens, adv),
      decode: (id) => tok.decode([id]),
    });
    const t0 = records[0]!.turns[0]!;
    expect(t0.token_advantages).toEqual(sampled0.map((_, i) => Math.fround(i * 0.25 - 1)));
    expect(t0.token_text).toEqual(sampled0.map((id) => tok.decode([id])));
    expect(t0.token_text!.join('')).toBe(tok.decode(sampled0));
    // Episode 1's trained ids are not its sampled ids: no per-token colours (its turn mean is still there).
    expect(records[1]!.turns[0]!.token_advantages).toBeNull();
    expect(records[1]!.turns[0]!.advantage).toBe(1);
  });

  it('writes a built-in turn with its loop fields in their order, an agent turn with its call and nothing made up', () => {
    const cfg = agentConfig({});
    const core = {
      turn: 0,
      promptIds: [1, 2],
      tokens: [3, 4],
      logprobs: [-0.1, -0.2],
      finishReason: 'stop' as const,
      response: 'r',
      reward: 1,
      penalty: 0,
      formatError: undefined,
      info: { success: true, actionIsValid: true, actionIsEffective: true },
    };
    const episode = { index: 0, tag: 'T', group: 0, member: 0, seed: 1, success: true, envReturn: 1, score: 1 };
    const builtin = episodeRecord(
      {
        ...episode,
        numActions: 1,
        endReason: 'terminated',
        loop: { system: 'sys', contextTruncations: 2, finalObservation: 'end' },
        turns: [
          {
            ...core,
            loop: {
              observation: 'obs',
              userText: 'user',
              think: 't',
              answer: 'Right',
              actions: [
                { action: 'Right', valid: true, effective: true, reward: 1, executed: true, skipped: false },
                { action: 'Jump', valid: false, effective: false, reward: 0, executed: false, skipped: false },
              ],
              droppedActions: 0,
            },
          },
        ],
      },
      cfg,
    );
    expect(Object.keys(builtin.turns[0]!).slice(0, 6)).toEqual([
      'turn',
      'observation',
      'response',
      'think',
      'answer',
      'actions',
    ]);
    expect(builtin.turns[0]!.actions).toEqual(['Right']);
    expect(builtin.context_truncations).toBe(2);
    expect(builtin.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(builtin.messages[1]!.content).toBe('user');

    const call = {
      messages: [{ role: 'user', content: 'guess' }],
      tools: null,
      reply: { role: 'assistant' as const, content: 'r' },
    };
    const agent = episodeRecord(
      { ...episode, numActions: 1, endReason: 'terminated', turns: [{ ...core, agentCall: call }] },
      cfg,
    );
    const turn = agent.turns[0]!;
    expect(turn.call).toEqual(call);
    for (const key of ['observation', 'think', 'answer', 'actions']) expect(turn, key).not.toHaveProperty(key);
    expect(agent.messages).toEqual([]);
    expect(agent.context_truncations).toBe(0);
  });
});
