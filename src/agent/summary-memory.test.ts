// `agent.summaryMemory`: the turns that leave a limited_multi_turn window are summarised by the policy itself, the
// summary opens the window's first user message, and its tokens are never trained (loss mask 0).
import { describe, expect, it } from 'vitest';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { agentConfig } from './config.js';
import { EnvGroups } from './env-groups.js';
import { SUMMARY_HEADER, SUMMARY_INSTRUCTION } from './episode-context.js';
import { enginePolicy } from './policies.js';
import { rollout } from './rollout.js';
import { ScriptedEngine, registerTestCorridor } from './testing.js';

registerTestCorridor();
const tiny = loadTokenizer(tinyTokenizerDir());

/**
 * Answers a summary request with a note naming how many turns it saw (and `+prev` when an earlier summary was in it),
 * anything else with `Right`.
 */
function engine(): ScriptedEngine {
  return new ScriptedEngine(tiny, (prompt) => {
    if (!prompt.includes(SUMMARY_INSTRUCTION)) return 'go</think><answer>Right</answer><|im_end|>';
    const turns = prompt.split('Your answer:').length - 1;
    return `memo ${turns}${prompt.includes(SUMMARY_HEADER) ? '+prev' : ''} moved right<|im_end|>`;
  });
}

async function play(summaryMemory: boolean) {
  const cfg = agentConfig({
    maxNewTokens: 24,
    maxTurns: 3,
    maxContextTokens: 1024,
    contextWindowMode: 'limited_multi_turn',
    maxContextWindow: 1,
    summaryMemory,
  });
  const groups = new EnvGroups({
    tags: [{ env: 'TestCorridor', nGroups: 1, config: { length: 9 } }],
    groupSize: 2,
    mode: 'val',
    seed: 5,
  });
  const scripted = engine();
  try {
    const batch = await rollout({
      groups,
      policy: enginePolicy(scripted, tiny, cfg, { seed: 1 }),
      tokenizer: tiny,
      agent: cfg,
    });
    return { batch, calls: scripted.calls };
  } finally {
    await groups.close();
  }
}

describe('agent.summaryMemory', () => {
  it('puts the policy’s summary of the turns that left the window before the window, each turn', async () => {
    const { batch, calls } = await play(true);
    const e = batch.episodes[0]!;
    expect(e.turns).toHaveLength(3);
    const prompts = e.turns.map((t) => tiny.decode(t.promptIds));
    expect(prompts[0]).not.toContain(SUMMARY_HEADER);
    // turn 2's window (1 turn) leaves turn 1 out: a summary of one turn; turn 3's: the old summary plus turn 2
    expect(prompts[1]).toContain(`${SUMMARY_HEADER}memo 1 moved right`);
    expect(prompts[2]).toContain(`${SUMMARY_HEADER}memo 1+prev moved right`);
    expect(prompts[2]).not.toContain('Turn 1:');
    // the summary request of turn 3 carries the previous summary and turn 2 (one "Your answer:")
    const summaryPrompts = calls
      .flatMap((c) => c.prompts.map((p) => tiny.decode(p)))
      .filter((p) => p.includes(SUMMARY_INSTRUCTION));
    expect(summaryPrompts).toHaveLength(2 * 2); // 2 episodes x turns 2 and 3
    expect(summaryPrompts.some((p) => p.includes(`${SUMMARY_HEADER}memo 1 moved right`) && p.includes('Turn 2:'))).toBe(
      true,
    );
    expect(calls).toHaveLength(3 + 2); // 3 action turns, 2 summary rounds
  });

  it('trains on the action tokens only: the summary is context (mask 0) and makes no sample of its own', async () => {
    const { batch } = await play(true);
    expect(batch.samples).toHaveLength(2 * 3); // one sample per turn per episode, none for summaries
    for (const s of batch.samples) {
      const trained = tiny.decode(s.ids.filter((_, t) => s.lossMask[t]));
      expect(trained).not.toContain('memo');
      expect(trained).toContain('Right');
    }
    expect(batch.samples.some((s) => tiny.decode(s.ids).includes('memo 1 moved right'))).toBe(true);
  });

  it('off: no summary requests, the dropped turns leave no trace', async () => {
    const { batch, calls } = await play(false);
    expect(calls).toHaveLength(3);
    expect(batch.episodes[0]!.turns.map((t) => tiny.decode(t.promptIds)).join('')).not.toContain(SUMMARY_HEADER);
  });

  it('needs a limited_multi_turn window', () => {
    expect(() => agentConfig({ summaryMemory: true })).toThrow(/summaryMemory.*limited_multi_turn/s);
    expect(() => agentConfig({ summaryMemory: true, contextWindowMode: 'limited_multi_turn' })).toThrow(
      /maxContextWindow/,
    );
  });
});
