// Golden prompts: the first prompt (chat template + prefill) of every built-in env, as the tiny model sees
// it, pinned in __golden__/<env>.txt. A deliberate prompt or env-text change: review the diff, then
// `npx vitest run src/agent/prompts.test.ts -u`.
import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { listEnvs } from '../env/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { agentConfig } from './config.js';
import { EnvGroups } from './env-groups.js';
import { randomPolicy } from './policies.js';
import { rollout } from './rollout.js';

const GOLDEN_ENVS = [
  'Bandit',
  'BanditTest',
  'Countdown',
  'MetamathQA',
  'SimpleSokoban',
  'LargerSokoban',
  'SokobanDifferentGridVocab',
  'CoordSokoban',
  'SimpleSudoku',
  'MediumSudoku',
  'game_2048',
  'rubikscube',
  'FrozenLake',
  'CoordFrozenLake',
];
const tiny = loadTokenizer(tinyTokenizerDir());

describe('golden prompts per env', () => {
  it('the golden envs are registered', () => {
    const ids = listEnvs().map((e) => e.id);
    for (const id of GOLDEN_ENVS) expect(ids).toContain(id);
  });

  for (const id of GOLDEN_ENVS) {
    it(`${id}: the first two prompts`, async () => {
      const cfg = agentConfig({ maxTurns: 2, maxNewTokens: 100 });
      const groups = new EnvGroups({ tags: [{ env: id, nGroups: 1 }], groupSize: 1, mode: 'val', seed: 123 });
      const batch = await rollout({ groups, policy: randomPolicy(tiny, cfg, 0), tokenizer: tiny, agent: cfg });
      const turns = batch.episodes[0]!.turns;
      const text = turns
        .map((t, i) => `=== prompt of turn ${i + 1}\n${tiny.decode(t.promptIds)}\n=== response\n${t.response}\n`)
        .join('');
      await expect(text).toMatchFileSnapshot(`__golden__/${id}.txt`);
      // what the golden files must show, whatever the env
      const first = tiny.decode(turns[0]!.promptIds);
      expect(first.startsWith("<|im_start|>system\nYou're a helpful assistant. ")).toBe(true);
      expect(first.endsWith('<|im_start|>assistant\n<think>')).toBe(true);
      expect(first).toMatch(/You can give (up to \d+|1) (action|answer)s? per turn/);
    });
  }
});
