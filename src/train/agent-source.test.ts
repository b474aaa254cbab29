// The pieces of the agent rollout source that need no program: the gateway's per-step counts, and joining two batches
// (episodes and samples renumbered so each sample still points at its own episode).
import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import type { Episode, RolloutBatch, TrainingSample } from '../agent/index.js';
import type { AgentOutcome, AgentStatus } from '../gateway/index.js';
import { loadConfig } from '../config/index.js';
import type { Gateway } from '../gateway/index.js';
import { agentBatches, gatewayMetrics, gatewayRefusals, joinBatches } from './agent-source.js';

function outcome(status: AgentStatus, calls: number, refused: number, duplicateRewards = 0): AgentOutcome {
  const log = {
    id: 'e',
    calls: Array.from({ length: calls }, (_, index) => ({
      index,
      promptIds: [1],
      completionIds: [2],
      logprobs: [-1],
      finishReason: 'stop' as const,
      text: '',
      messages: [],
      tools: null,
    })),
    reward: undefined,
    refusedCalls: refused,
    duplicateRewards,
  };
  return {
    task: { episodeId: 'e', seed: 0, group: 0 },
    status,
    reward: 0,
    rewardSource: null,
    ignoredReward: undefined,
    log,
    exitCode: 0,
    signal: null,
    stderrTail: '',
    durationMs: 1,
  };
}

function batch(tag: string, n: number): RolloutBatch {
  const episodes = Array.from(
    { length: n },
    (_, index) => ({ index, tag, group: 0, member: index, turns: [] }) as unknown as Episode,
  );
  const samples = episodes.map(
    (e) => ({ episode: e.index, tag, group: 0, ids: [e.index] }) as unknown as TrainingSample,
  );
  return { episodes, samples, metrics: { [tag]: { episodes: n } as never }, groupSize: n };
}

describe('agent rollout source', () => {
  it('counts calls, refused calls and episodes by status', () => {
    const m = gatewayMetrics(
      [
        outcome('ok', 3, 0, 2),
        outcome('ok', 1, 0),
        outcome('crashed', 0, 0),
        outcome('timeout', 2, 5),
        outcome('no_reward', 2, 0, 1),
      ],
      7,
    );
    expect(m).toEqual({
      'gateway/calls': 8,
      'gateway/refused_calls': 5,
      'gateway/unauthorized_calls': 7,
      'gateway/duplicate_rewards': 3,
      'gateway/calls_per_episode': 8 / 5,
      'gateway/episodes_ok': 2,
      'gateway/episodes_no_reward': 1,
      'gateway/episodes_crashed': 1,
      'gateway/episodes_timeout': 1,
      'gateway/unparsed_tool_call_rate': 0,
    });
    expect(gatewayMetrics([])['gateway/calls_per_episode']).toBe(0);
  });

  it('item 1: says what the gateway refused in one line with each count, and nothing when it refused nothing', () => {
    expect(gatewayRefusals(gatewayMetrics([outcome('ok', 1, 0)]))).toBeNull();
    expect(gatewayRefusals(gatewayMetrics([outcome('ok', 1, 0, 1)], 12))).toBe(
      'the gateway refused 12 request(s) that named no open episode (404: a wrong secret in the URL, or an episode that had ended), 1 second reward(s) of an episode (409: the first one counts)',
    );
    expect(gatewayRefusals(gatewayMetrics([outcome('ok', 1, 4)]))).toBe(
      "the gateway refused 4 call(s) over an episode's maxCalls (429)",
    );
  });

  it('counts the calls offered tools whose reply garbles a tool call, among those calls only', () => {
    const ok = '<tool_call>\n{"name": "guess", "arguments": {"n": 8}}\n</tool_call>';
    const replies: [string, boolean][] = [
      [ok, true],
      ['<tool_call>\n{"name": "guess", "arguments": {"n": 8}\n</tool_call>', true],
      ['</ol_call>\n{"name": "g"}</tool_call>', true],
      ['plain words', true],
      [ok.replace('tool_call>', 'tool_call'), true],
      ['<tool_call>{"name": 3}</tool_call>', false],
    ];
    const o = outcome('ok', replies.length, 0);
    o.log.calls.forEach((c, i) => Object.assign(c, { text: replies[i]![0], tools: replies[i]![1] ? [{}] : null }));
    // tools offered on 5 calls: the well-formed one and the plain text are fine; the missing brace, the garbled tag and
    // the unclosed block are not
    expect(gatewayMetrics([o])['gateway/unparsed_tool_call_rate']).toBeCloseTo(3 / 5);
  });

  it("joins batches: the second batch's episodes and samples move past the first's, metrics kept per tag", () => {
    const j = joinBatches([batch('Env', 3), batch('agent', 2)]);
    expect(j.episodes.map((e) => [e.index, e.tag])).toEqual([
      [0, 'Env'],
      [1, 'Env'],
      [2, 'Env'],
      [3, 'agent'],
      [4, 'agent'],
    ]);
    for (const s of j.samples) expect(j.episodes[s.episode]!.tag).toBe(s.tag);
    expect(j.samples.map((s) => s.episode)).toEqual([0, 1, 2, 3, 4]);
    expect(Object.keys(j.metrics)).toEqual(['Env', 'agent']);
  });

  it("names the entry's config key when its in-process module is missing (before any episode opens on the gateway)", async () => {
    const config = loadConfig({
      config: 'bandit-ppo',
      overrides: [
        'env.train=[{tag: Bandit, groups: 1, groupSize: 2}, {agent: {module: ./no-such-agent.mjs}, groups: 1, groupSize: 2}]',
      ],
    });
    const untouched = new Proxy(
      {},
      {
        get: (_t, k) => {
          throw new Error(`the gateway was used (${String(k)})`);
        },
      },
    ) as Gateway;
    await expect(
      agentBatches(untouched, config, 'train', { seedBase: 0, samplingSeed: 0, idPrefix: 's1' }),
    ).rejects.toThrow(/`env\.train\.1\.agent\.module`/);
  });
});
