// RAGEN's think and step penalties (its PR #160, es_manager): a long <think> and every executed action cost reward;
// they go into the turn's penalty beside the format penalty, without counting as format errors.
import '../envs/index.js';
import { describe, expect, it } from 'vitest';
import { agentConfig, EnvGroups, enginePolicy, rollout } from '../agent/index.js';
import { ScriptedEngine, registerTestCorridor } from '../agent/testing.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { trainMetrics } from './rollout-metrics.js';

registerTestCorridor();
const tok = loadTokenizer(tinyTokenizerDir());

async function oneTurn(think: string, answer: string, agent: Record<string, unknown>) {
  const cfg = agentConfig({ maxTurns: 1, formatPenalty: -0.1, ...agent });
  const groups = new EnvGroups({
    tags: [{ env: 'TestCorridor', nGroups: 1, config: { length: 5 } }],
    groupSize: 1,
    mode: 'val',
    seed: 1,
  });
  const engine = new ScriptedEngine(tok, () => `${think}</think><answer>${answer}</answer><|im_end|>`);
  try {
    const batch = await rollout({
      groups,
      policy: enginePolicy(engine, tok, cfg, { seed: 1 }),
      tokenizer: tok,
      agent: cfg,
    });
    return { turn: batch.episodes[0]!.turns[0]!, batch };
  } finally {
    await groups.close();
  }
}

describe('think and step penalties', () => {
  it('thinkLenPenalty × (len − limit)/limit when the think text is longer than thinkLenLimit characters', async () => {
    // 30 characters of think, limit 20: excess ratio 0.5; penalty −0.2 × 0.5 = −0.1.
    const { turn, batch } = await oneTurn('a'.repeat(30), 'Right', { thinkLenPenalty: -0.2, thinkLenLimit: 20 });
    expect(turn.penalty).toBeCloseTo(-0.1, 12);
    expect(trainMetrics(batch)['train/format_error_rate']).toBe(0); // not a format error
    const short = await oneTurn('a'.repeat(20), 'Right', { thinkLenPenalty: -0.2, thinkLenLimit: 20 });
    expect(short.turn.penalty).toBe(0);
  });

  it('stepPenalty is added once per executed action', async () => {
    const { turn } = await oneTurn('x', 'Right || Right || Left', { stepPenalty: -0.05, maxActionsPerTurn: 3 });
    expect(turn.loop!.actions.filter((a) => a.executed)).toHaveLength(3);
    expect(turn.penalty).toBeCloseTo(-0.15, 12);
  });

  it('adds to the format penalty, which alone counts as a format error', async () => {
    const { turn, batch } = await oneTurn('x', 'Jump', { stepPenalty: -0.05 });
    expect(turn.penalty).toBeCloseTo(-0.1, 12); // format penalty; the invalid action was not executed
    expect(trainMetrics(batch)['train/format_error_rate']).toBe(1);
  });

  it('are off by default', async () => {
    const { turn } = await oneTurn('a'.repeat(100), 'Right || Right', {});
    expect(turn.penalty).toBe(0);
  });
});
