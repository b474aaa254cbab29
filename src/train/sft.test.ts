import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collate } from '../agent/index.js';
import { describe, expect, test, vi } from 'vitest';
import { EnvGroups, agentConfig, oraclePolicy, parseResponse, prefillText, rollout } from '../agent/index.js';
import { LocalEngine } from '../engine/index.js';
import { loadModel, Transformer } from '../model/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { main } from '../cli/main.js';
import { buildDemos, DEMO_REASONING } from './sft-demos.js';
import { maskedCrossEntropy, presetModelConfig, runSft } from './sft.js';

const tokenizer = loadTokenizer(tinyTokenizerDir());
const agent = agentConfig({
  contextWindowMode: 'limited_multi_turn',
  maxContextWindow: 1,
  maxNewTokens: 64,
  maxContextTokens: 1024,
});

describe('SFT demonstrations', () => {
  test('without reasoning or noise they are exactly the oracle rollout of the agent loop (tokens and masks)', async () => {
    const demos = await buildDemos(tokenizer, agent, {
      envs: ['SimpleSokoban', 'CoordFrozenLake'],
      episodes: 6,
      reasoning: {},
    });
    const expected = [];
    let seed = 10000;
    for (const env of ['SimpleSokoban', 'CoordFrozenLake']) {
      const groups = new EnvGroups({ tags: [{ env, nGroups: 6 }], groupSize: 1, mode: 'train', seed });
      expected.push(...(await rollout({ groups, policy: oraclePolicy(tokenizer, agent), tokenizer, agent })).samples);
      seed += 6;
    }
    expect(demos.samples.map((s) => [s.ids, s.lossMask])).toEqual(expected.map((s) => [s.ids, s.lossMask]));
    expect(demos.success).toEqual({ SimpleSokoban: 1, CoordFrozenLake: 1 });
  });

  test('the loss mask covers exactly the assistant response of each turn, and the prompt is the chat template', async () => {
    const demos = await buildDemos(tokenizer, agent, { envs: ['SimpleSokoban', 'Bandit'], episodes: 4 });
    expect(demos.samples.length).toBeGreaterThan(8);
    for (const s of demos.samples) {
      const first = s.lossMask.indexOf(1);
      const last = s.lossMask.lastIndexOf(1);
      expect(s.lossMask.slice(first, last + 1).every((m) => m === 1)).toBe(true);
      expect(last).toBe(s.ids.length - 1); // stopAtAnswer: the sample ends with the sampled `</answer>`
      const ep = demos.episodes[s.episode]!;
      const turn = ep.turns[s.turns[0]!]!;
      expect(s.ids.slice(first)).toEqual(turn.tokens);
      const prompt =
        tokenizer.applyChatTemplate(
          [
            { role: 'system', content: ep.loop!.system },
            { role: 'user', content: turn.loop!.userText },
          ],
          { addGenerationPrompt: true },
        ) + prefillText(agent);
      expect(s.ids.slice(0, first)).toEqual(tokenizer.encode(prompt));
      const parsed = parseResponse(prefillText(agent) + tokenizer.decode(turn.tokens), {
        enableThink: true,
        actionSep: '||',
        maxActions: 2,
      });
      expect(parsed.ok).toBe(true);
      expect(parsed.think).toBe(
        DEMO_REASONING[ep.tag]!({
          observation: turn.loop!.observation,
          actionNames: undefined,
          plan: parsed.actions,
          actions: parsed.actions,
        }),
      );
    }
  });

  test('reasoning names positions in row/column notation; noise replaces the actions of a fraction of episodes', async () => {
    const obs = '######\n#_####\n#O__##\n#_X_##\n#_P_##\n######';
    expect(
      DEMO_REASONING.SimpleSokoban!({ observation: obs, actionNames: undefined, plan: ['Up'], actions: ['Up'] }),
    ).toBe('player (4, 2), box (3, 2), target (2, 1)');
    const clean = await buildDemos(tokenizer, agent, { envs: ['Bandit'], episodes: 40 });
    const noisy = await buildDemos(tokenizer, agent, { envs: ['Bandit'], episodes: 40, noise: { Bandit: 1 } });
    expect(clean.success.Bandit).toBe(1);
    expect(noisy.success.Bandit).toBeGreaterThan(0.2);
    expect(noisy.success.Bandit).toBeLessThan(0.8);
  });
});

describe('runSft', () => {
  test('lowers the masked cross-entropy on its demonstrations (micro model, few steps)', async () => {
    const demos = await buildDemos(tokenizer, agent, { envs: ['Bandit'], episodes: 8 });
    const config = { ...presetModelConfig('micro', tokenizer.vocabSize, 1024) };
    const engine = new LocalEngine({ policy: Transformer.init(config, 0) });
    const result = await runSft(engine, tokenizer, agent, demos.samples, {
      steps: 30,
      batch: 4,
      lr: 1e-2,
      warmupSteps: 3,
    });
    expect(Number.isFinite(result.finalLoss)).toBe(true);
    expect(result.firstLoss).toBeGreaterThan(5); // ~ln(1024) at init
    expect(result.finalLoss).toBeLessThan(0.6 * result.firstLoss);
    engine.dispose();
  });

  test('maskedCrossEntropy puts -1/N on the mask-1 tokens (token-aligned), padding and token 0 excluded', () => {
    const sample = (ids: number[], lossMask: number[]) => ({
      ids,
      lossMask,
      logprobs: ids.map(() => 0),
      rewards: ids.map(() => 0),
      turnIds: ids.map(() => 0),
      score: 0,
      episode: 0,
      group: 0,
      tag: 't',
      turns: [0],
      length: ids.length,
    });
    const batch = collate([sample([5, 6, 7, 8], [0, 0, 1, 1]), sample([5, 9], [1, 1])], 0);
    const ce = maskedCrossEntropy(batch);
    const g = ce.grad({ logprobs: Float32Array.from([0, -1, -2, -4, 0, -3, 0, 0]) });
    expect(Array.from(g.logprobs!)).toEqual([0, 0, -1 / 3, -1 / 3, 0, -1 / 3, 0, 0].map(Math.fround));
    expect(ce.loss()).toBe(3);
  });
});

describe('ragen sft', () => {
  test('--help names the options', async () => {
    let out = '';
    const write = vi
      .spyOn(process.stdout, 'write')
      .mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
    await main(['sft', '--help']);
    write.mockRestore();
    for (const flag of [
      '--env',
      '--episodes',
      '--steps',
      '--batch',
      '--lr',
      '--model',
      '--init',
      '--lora',
      '--out',
      '--noise',
    ])
      expect(out).toContain(flag);
  });

  test('trains a micro model from scratch and saves it in Hugging Face layout', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'ragen-sft-')), 'model');
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const code = await main([
      'sft',
      '--env',
      'Bandit',
      '--episodes',
      '4',
      '--steps',
      '3',
      '--batch',
      '2',
      '--init',
      'micro',
      '--val-every',
      '0',
      '--val-groups',
      '1',
      '--progress',
      'none',
      '--out',
      out,
    ]);
    vi.restoreAllMocks();
    expect(code).toBe(0);
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'sft_args.json'])
      expect(existsSync(join(out, f)), f).toBe(true);
    const { model } = await loadModel(out);
    expect(model.config.vocabSize).toBe(tokenizer.vocabSize);
    expect(JSON.parse(readFileSync(join(out, 'sft_args.json'), 'utf8')).steps).toBe(3);
    // transformers' generate stops at the tokenizer's end id, not its default
    expect([model.config.eosTokenId, model.config.padTokenId]).toEqual([tokenizer.eosTokenId, tokenizer.padTokenId]);
  });

  test('--model takes a shipped model by name; a name that is nothing is one sentence naming the flag', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'ragen-sft-')), 'model');
    const err: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
    const code = await main([
      'sft',
      '--env',
      'Bandit',
      '--episodes',
      '2',
      '--steps',
      '1',
      '--batch',
      '2',
      '--model',
      'ragen-tiny',
      '--val-every',
      '0',
      '--val-groups',
      '1',
      '--progress',
      'none',
      '--out',
      out,
    ]);
    const bad = await main(['sft', '--env', 'Bandit', '--model', 'no-such-model', '--out', out]);
    vi.restoreAllMocks();
    expect(code, err.join('\n')).toBe(0);
    expect(existsSync(join(out, 'model.safetensors'))).toBe(true);
    expect(bad).toBe(2);
    expect(err.join('\n')).toMatch(/Bad --model = "no-such-model": .*ragen-tiny/);
  });
});
