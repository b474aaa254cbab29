// The oracle of a service env (Lean, through a stand-in Kimina server) playing through the full text loop;
// src/agent/oracle.test.ts covers the envs that need no service.
import '../envs/index.js'; // the built-in environments
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FakeKiminaServer } from '../envs/lean/fake-kimina.js';
import { generateTheorems } from '../envs/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { agentConfig } from './config.js';
import { EnvGroups } from './env-groups.js';
import { oraclePolicy } from './policies.js';
import { rollout } from './rollout.js';

const fake = new FakeKiminaServer(generateTheorems(120));
let url = '';
beforeAll(async () => {
  url = await fake.start();
});
afterAll(() => fake.stop());

describe('the Lean oracle through the text loop (prompt -> tokens -> parse -> step)', () => {
  test('proves every val theorem of 8 seeds, 4 tactics per turn as RAGEN runs it', async () => {
    const tiny = loadTokenizer(tinyTokenizerDir());
    const cfg = agentConfig({ maxTurns: 15, maxActionsPerTurn: 4, maxNewTokens: 200, maxContextTokens: 16384 });
    const groups = new EnvGroups({
      tags: [{ env: 'Lean', nGroups: 8, config: { serverUrl: url } }],
      groupSize: 1,
      mode: 'val',
      seed: 123,
    });
    const batch = await rollout({ groups, policy: oraclePolicy(tiny, cfg), tokenizer: tiny, agent: cfg });
    expect(batch.episodes.map((e) => e.success)).toEqual(new Array(8).fill(true));
    expect(batch.metrics['Lean']!['format_error_rate']).toBe(0);
  });
});
