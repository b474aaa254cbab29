import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { LocalEngine } from '../engine/index.js';
import { modelConfig } from '../model/index.js';
import { loadQwenTokenizer, loadTokenizer, type Tokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { agentConfig, type AgentConfig } from './config.js';
import { collate } from './collate.js';
import { EnvGroups } from './env-groups.js';
import { enginePolicy, randomPolicy } from './policies.js';
import { episodeMessages, rollout, type EpisodeTurn, type RolloutBatch } from './rollout.js';
import { ScriptedEngine, corridorSteps, registerTestCorridor } from './testing.js';
import { oraclePolicy } from './policies.js';

registerTestCorridor();
const tiny = loadTokenizer(tinyTokenizerDir());

/**
 * Responses (after the prefilled <think>) cycled over turns and envs: good, multi-action, malformed, invalid, overlong.
 */
const RESPONSES = [
  'go right</think><answer>Right</answer><|im_end|>',
  'two</think><answer>Right || Right || Left</answer><|im_end|>',
  'no tags at all<|im_end|>',
  'x</think><answer>Jump</answer><|im_end|>',
  'a'.repeat(300),
];

function scriptedEngine(tok: Tokenizer): ScriptedEngine {
  let call = 0;
  return new ScriptedEngine(tok, (_prompt, i) => RESPONSES[(call++ + i * 2) % RESPONSES.length]!);
}

async function run(tok: Tokenizer, cfg: AgentConfig, nGroups = 3, groupSize = 2): Promise<RolloutBatch> {
  const groups = new EnvGroups({
    tags: [{ env: 'TestCorridor', nGroups, config: { length: 5 } }],
    groupSize,
    mode: 'val',
    seed: 123,
  });
  return rollout({
    groups,
    policy: enginePolicy(scriptedEngine(tok), tok, cfg, { seed: 1 }),
    tokenizer: tok,
    agent: cfg,
  });
}

/**
 * The invariant: each turn's prompt ids + sampled ids sit verbatim in its sample, the mask covers exactly the sampled
 * ids.
 */
function checkBookkeeping(
  batch: RolloutBatch,
  perTurn: boolean,
  logprobOf: (id: number, turn: EpisodeTurn, k: number) => number = ScriptedEngine.fakeLogprob,
): void {
  let sampled = 0;
  for (const e of batch.episodes) {
    const samples = batch.samples.filter((s) => s.episode === e.index);
    const covered = new Map<object, Set<number>>();
    for (const t of e.turns) {
      const holders = samples.filter((s) => s.turns.includes(t.turn));
      expect(holders).toHaveLength(1);
      const s = holders[0]!;
      const P = t.promptIds.length;
      expect(s.ids.slice(0, P)).toEqual(t.promptIds);
      expect(s.ids.slice(P, P + t.tokens.length)).toEqual(t.tokens);
      if (perTurn) expect(s.ids.length).toBe(P + t.tokens.length);
      for (let k = 0; k < t.tokens.length; k++) {
        expect(s.lossMask[P + k]).toBe(1);
        expect(s.logprobs[P + k]).toBeCloseTo(logprobOf(t.tokens[k]!, t, k), 12);
        expect(s.turnIds[P + k]).toBe(t.turn);
      }
      if (!covered.has(s)) covered.set(s, new Set());
      for (let k = 0; k < t.tokens.length; k++) covered.get(s)!.add(P + k);
      sampled += t.tokens.length;
    }
    for (const s of samples) {
      const want = covered.get(s) ?? new Set<number>();
      s.lossMask.forEach((m, i) => expect(m === 1, `sample of episode ${e.index}, position ${i}`).toBe(want.has(i)));
      s.rewards.forEach((r, i) => {
        if (r !== 0) expect(s.lossMask[i]).toBe(1);
      });
      s.logprobs.forEach((l, i) => {
        if (!s.lossMask[i]) expect(l).toBe(0);
      });
    }
  }
  expect(batch.samples.reduce((a, s) => a + s.lossMask.reduce((x, y) => x + y, 0), 0)).toBe(sampled);
}

describe('rollout: exact token bookkeeping', () => {
  for (const stopAtAnswer of [true, false]) {
    it(`full mode, tiny tokenizer, stopAtAnswer=${stopAtAnswer}: one sample per episode equal to what the model saw`, async () => {
      const cfg = agentConfig({ maxNewTokens: 40, stopAtAnswer, maxTurns: 5 });
      const batch = await run(tiny, cfg);
      expect(batch.samples).toHaveLength(batch.episodes.length);
      checkBookkeeping(batch, false);
      const reasons = new Set(batch.episodes.flatMap((e) => e.turns.map((t) => t.finishReason)));
      expect(reasons).toEqual(new Set(['stop', 'length']));
      // the sample's text is the chat template's rendering of the conversation, up to the final closing tag
      for (const e of batch.episodes) {
        const s = batch.samples.find((x) => x.episode === e.index)!;
        const text = tiny.decode(s.ids);
        const rendered = tiny.applyChatTemplate(episodeMessages(e, cfg));
        expect(rendered.startsWith(text)).toBe(true);
        expect(['', '<|im_end|>\n', '\n']).toContain(rendered.slice(text.length));
        // reward: the episode score on the last sampled token
        const last = s.lossMask.lastIndexOf(1);
        expect(s.rewards[last]).toBeCloseTo(e.score, 12);
        expect(s.rewards.filter((r) => r !== 0).length).toBeLessThanOrEqual(1);
      }
    });
  }

  it("full mode with Qwen's tokenizer and Qwen2.5's template", async () => {
    const qwen = loadQwenTokenizer();
    const batch = await run(qwen, agentConfig({ maxNewTokens: 40, maxTurns: 4, stopAtAnswer: false }), 2, 2);
    checkBookkeeping(batch, false);
    expect(qwen.decode(batch.samples[0]!.ids)).toMatch(
      /^<\|im_start\|>system\nYou're a helpful assistant\. Walk to the goal G\./,
    );
  });

  it("refuses Qwen3's template, which rewrites earlier turns, with a clear error", async () => {
    const q3 = loadQwenTokenizer('qwen3');
    await expect(run(q3, agentConfig({ maxNewTokens: 40, maxTurns: 3, stopAtAnswer: false }), 1, 1)).rejects.toThrow(
      /not append-only/,
    );
  });

  it('limited_multi_turn: one sample per turn, holding at most the last k turns, trained on the last only', async () => {
    const cfg = agentConfig({
      maxNewTokens: 40,
      maxTurns: 5,
      contextWindowMode: 'limited_multi_turn',
      maxContextWindow: 2,
    });
    const batch = await run(tiny, cfg);
    const turns = batch.episodes.reduce((a, e) => a + e.turns.length, 0);
    expect(batch.samples).toHaveLength(turns);
    checkBookkeeping(batch, true);
    for (const s of batch.samples) {
      expect(s.turns).toHaveLength(1);
      const text = tiny.decode(s.ids);
      expect(text.split('<|im_start|>user').length - 1).toBeLessThanOrEqual(2);
      expect(text).toContain(`Turn ${s.turns[0]! + 1}:`);
      if (s.turns[0]! >= 2) expect(text).not.toContain(`Turn ${s.turns[0]! - 1}:`);
    }
  });

  it('single_turn: [system, user] per turn with the history summarised in the user message', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 4, contextWindowMode: 'single_turn', maxContextWindow: 3 });
    const batch = await run(tiny, cfg);
    checkBookkeeping(batch, true);
    for (const s of batch.samples) {
      const text = tiny.decode(s.ids);
      expect(text.split('<|im_start|>').length - 1).toBe(3); // system, user, assistant
      if (s.turns[0]! > 0) expect(text).toContain(`Summary: ${s.turns[0]} turn`);
    }
  });

  it('use_turn_scores: each turn reward (format penalty included) sits on its last sampled token', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 5, useTurnScores: true, stopAtAnswer: false });
    const batch = await run(tiny, cfg);
    checkBookkeeping(batch, false);
    for (const e of batch.episodes) {
      const s = batch.samples.find((x) => x.episode === e.index)!;
      for (const t of e.turns) {
        const lastPos = t.promptIds.length + t.tokens.length - 1;
        expect(s.rewards[lastPos]).toBeCloseTo(t.reward + t.penalty, 12);
      }
      expect(s.score).toBeCloseTo(e.score, 12);
    }
  });
});

describe('rollout: exact token bookkeeping with a real model', () => {
  // A random tiny model samples token sequences no tokenizer would produce from their text (byte
  // pieces instead of merges, special tokens mid-answer): re-encoding its decoded text would change them.
  const engine = LocalEngine.create(
    modelConfig({
      vocabSize: tiny.vocabSize,
      hiddenSize: 16,
      intermediateSize: 32,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      maxPositionEmbeddings: 2048,
    }),
    { seed: 3, decode: (ids) => tiny.decode(ids) },
  );

  for (const mode of ['full', 'limited_multi_turn', 'single_turn'] as const) {
    it(`${mode}: the samples hold the sampled ids verbatim, and a teacher-forced forward pass gives back their sampling log-probs`, async () => {
      const cfg = agentConfig({
        maxNewTokens: 12,
        maxTurns: 3,
        maxContextTokens: 1024,
        contextWindowMode: mode,
        ...(mode === 'full' ? {} : { maxContextWindow: 2 }),
      });
      const groups = new EnvGroups({
        tags: [
          { env: 'SimpleSokoban', nGroups: 2 },
          { env: 'Countdown', nGroups: 1 },
        ],
        groupSize: 2,
        mode: 'train',
        seed: 10000,
      });
      const batch = await rollout({
        groups,
        policy: enginePolicy(engine, tiny, cfg, { temperature: 1, seed: 5 }),
        tokenizer: tiny,
        agent: cfg,
      });
      checkBookkeeping(batch, mode !== 'full', (_id, t, k) => t.logprobs[k]!);
      const turns = batch.episodes.flatMap((e) => e.turns);
      expect(turns.some((t) => JSON.stringify(tiny.encode(tiny.decode(t.tokens))) !== JSON.stringify(t.tokens))).toBe(
        true,
      );
      const tokens = collate(batch.samples, tiny.padTokenId);
      const fwd = await engine.forward(tokens, { role: 'policy' });
      for (let i = 0; i < tokens.B * tokens.T; i++)
        if (tokens.lossMask[i]) expect(Math.abs(fwd.logprobs[i]! - tokens.oldLogprobs[i]!)).toBeLessThan(1e-3);
    });
  }
});

describe('rollout: context length', () => {
  it('counts an episode whose first prompt does not fit as truncated (context_full, zero turns)', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 6, maxContextTokens: 60 });
    const batch = await run(tiny, cfg, 2, 1);
    for (const e of batch.episodes) {
      expect(e.turns).toHaveLength(0);
      expect(e.endReason).toBe('context_full');
      expect(e.loop?.contextTruncations).toBe(1);
    }
    expect(batch.metrics['TestCorridor']!['context_truncations']).toBe(1);
  });

  it('drops whole oldest turns to fit maxContextTokens, counts it, and starts a new sample', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 6, maxContextTokens: 330, stopAtAnswer: false });
    const batch = await run(tiny, cfg, 2, 1);
    checkBookkeeping(batch, false);
    const truncated = batch.episodes.filter((e) => e.loop!.contextTruncations > 0);
    expect(truncated.length).toBeGreaterThan(0);
    expect(batch.metrics['TestCorridor']!['context_truncations']).toBeGreaterThan(0);
    for (const e of batch.episodes) {
      for (const t of e.turns) {
        expect(t.promptIds.length + cfg.maxNewTokens).toBeLessThanOrEqual(cfg.maxContextTokens);
        const text = tiny.decode(t.promptIds);
        // system first, then only whole turns: every user message opens with its reward line or "Turn n:"
        expect(text.startsWith(`<|im_start|>system\n${e.loop!.system}<|im_end|>\n`)).toBe(true);
        for (const part of text.split('<|im_start|>user\n').slice(1))
          expect(part).toMatch(/^(Reward: -?[\d.]+\n)?Turn \d+:\nState:\n/);
        expect(text).toContain(`Turn ${t.turn + 1}:\nState:\n${t.loop!.observation}\n`);
      }
    }
    for (const e of truncated) expect(batch.samples.filter((s) => s.episode === e.index).length).toBeGreaterThan(1);
  });
});

describe('rollout: prompts, penalties and determinism', () => {
  it('writes the golden prompt of the test corridor', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 3, stopAtAnswer: false });
    const batch = await run(tiny, cfg, 1, 1);
    const e = batch.episodes[0]!;
    expect(e.loop!.system).toBe(
      "You're a helpful assistant. Walk to the goal G.\nP is you, G is the goal, _ is floor.\nYour available actions are: Left, Right.\n" +
        'You can give up to 2 actions per turn, separated by " || ", and up to 6 actions in the whole episode.',
    );
    expect(e.turns[0]!.loop!.userText).toBe(
      'Turn 1:\nState:\nP___G\nYou have 6 actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 40 tokens.',
    );
    // turn 1 moved Right once (reward -0.1); turn 2 moved Right, Right (two actions, the third dropped)
    expect(
      e.turns[1]!.loop!.userText.startsWith('Reward: -0.1\nTurn 2:\nState:\n_P__G\nYou have 5 actions left.'),
    ).toBe(true);
    expect(
      e.turns[2]!.loop!.userText.startsWith('Reward: -0.2\nTurn 3:\nState:\n___PG\nYou have 3 actions left.'),
    ).toBe(true);
    expect(tiny.decode(e.turns[0]!.promptIds).endsWith('<|im_start|>assistant\n<think>')).toBe(true);
  });

  it('penalises malformed and invalid turns and warns on the next turn', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 5, formatPenalty: -0.5 });
    const batch = await run(tiny, cfg, 1, 1);
    const turns = batch.episodes[0]!.turns;
    expect(turns.map((t) => t.penalty)).toEqual([0, 0, -0.5, -0.5, -0.5]);
    expect(turns[2]!.formatError).toBe('no </think> after <think>');
    expect(turns[3]!.loop!.actions[0]).toMatchObject({ action: 'Jump', valid: false, executed: false });
    expect(turns[3]!.loop!.userText).toContain('no valid action');
    expect(turns[4]!.loop!.userText).toContain('no valid action');
    // the reward line shows the env reward of the previous turn, not the format penalty
    expect(turns[3]!.loop!.userText.startsWith('Reward: 0\nTurn 4:')).toBe(true);
    expect(turns[1]!.loop!.droppedActions).toBe(1);
  });

  it('same seeds give the same episodes; train seeds advance, val seeds stay', async () => {
    const cfg = agentConfig({ maxNewTokens: 40, maxTurns: 4 });
    const play = async (mode: 'train' | 'val') => {
      const groups = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 2 }], groupSize: 3, mode, seed: 50 });
      const policy = randomPolicy(tiny, cfg, 9);
      const a = await rollout({ groups, policy, tokenizer: tiny, agent: cfg });
      const b = await rollout({ groups, policy, tokenizer: tiny, agent: cfg });
      return [a, b] as const;
    };
    const [v1, v2] = await play('val');
    const [w1] = await play('val');
    expect(JSON.stringify(w1.episodes)).toBe(JSON.stringify(v1.episodes));
    expect(JSON.stringify(w1.samples)).toBe(JSON.stringify(v1.samples));
    expect(v1.episodes.map((e) => e.seed)).toEqual([50, 50, 50, 51, 51, 51]);
    expect(v2.episodes.map((e) => e.seed)).toEqual([50, 50, 50, 51, 51, 51]);
    const [t1, t2] = await play('train');
    expect(t1.episodes.map((e) => e.seed)).toEqual([50, 50, 50, 51, 51, 51]);
    expect(t2.episodes.map((e) => e.seed)).toEqual([52, 52, 52, 53, 53, 53]);
  });

  it('the no-think variant prefills <answer> and the oracle still wins; envs step concurrently', async () => {
    const cfg = agentConfig({ enableThink: false, maxTurns: 3, stopAtAnswer: false });
    const groups = new EnvGroups({ tags: [{ env: 'TestCorridor', nGroups: 3 }], groupSize: 2, mode: 'val', seed: 1 });
    corridorSteps.maxInFlight = 0;
    const batch = await rollout({ groups, policy: oraclePolicy(tiny, cfg), tokenizer: tiny, agent: cfg });
    expect(batch.metrics['TestCorridor']!['success']).toBe(1);
    expect(corridorSteps.maxInFlight).toBe(6);
    const t = batch.episodes[0]!.turns[0]!;
    expect(tiny.decode(t.promptIds).endsWith('<|im_start|>assistant\n<answer>')).toBe(true);
    expect(t.loop!.userText).toContain('Always output: <answer> [your answer] </answer> with no extra text.');
    expect(t.response).toBe('Right || Right</answer>');
    checkBookkeeping(batch, false, () => 0);
  });
});
