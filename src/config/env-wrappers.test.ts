// `env.wrappers.<tag>` in a config: the wrappers reach every env of the tag (local or remote), only settings that
// change something add a wrapper, and unused tags or a reversed clip are config errors naming the key.
import '../envs/index.js'; // the built-in environments
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvGroups } from '../agent/index.js';
import { EnvServer, registerRemoteEnv } from '../env/remote/index.js';
import { checkRunConfig } from './check.js';
import { loadConfig, resolveConfig } from './load.js';
import { envGroupsOptions, wrapOptionsOf } from './rollout-options.js';

let server: EnvServer;
let remote: string;
beforeAll(async () => {
  server = new EnvServer({ envIds: ['SimpleSokoban'], port: 0, log: () => {} });
  remote = `remote:ws://127.0.0.1:${await server.listen()}/SimpleSokoban`;
  await registerRemoteEnv(remote);
});
afterAll(() => server.close());

/** The reward of the first turn (Up, Left) of slot 0, seed 5, under the config's wrappers for `tag`. */
async function firstTurnReward(tag: string, wrappers?: Record<string, unknown>): Promise<number> {
  const config = resolveConfig(
    [
      {
        source: 'test',
        data: {
          env: { train: [{ tag, groups: 1, groupSize: 1 }], ...(wrappers ? { wrappers: { [tag]: wrappers } } : {}) },
          trainer: { miniBatchSize: 1, microBatchSize: 1 },
        },
      },
    ],
    [],
  );
  const groups = new EnvGroups({ ...envGroupsOptions(config, 'train'), seed: 5 });
  await groups.reset();
  const r = await groups.step(groups.slots[0]!, ['Up', 'Left']);
  await groups.close();
  return r.reward;
}

describe('env.wrappers', () => {
  it('scales and shifts the rewards of local and remote envs alike', async () => {
    const plain = await firstTurnReward('SimpleSokoban');
    expect(plain).not.toBe(0);
    expect(await firstTurnReward('SimpleSokoban', { rewardScale: 10, rewardShift: 1 })).toBeCloseTo(10 * plain + 2); // two steps, +1 each
    expect(await firstTurnReward(remote, { rewardScale: 10, rewardShift: 1 })).toBeCloseTo(10 * plain + 2);
  });

  it('adds a wrapper only for settings that change something', () => {
    const d = loadConfig({ overrides: ['env.wrappers.SimpleSokoban={}'] }).env.wrappers.SimpleSokoban!;
    expect(wrapOptionsOf(d)).toEqual({});
    const w = loadConfig({
      overrides: [
        'env.wrappers.SimpleSokoban={formatPenalty: -0.1, observationMaxChars: 40, observationKeep: tail, rewardClip: [-1, 1]}',
      ],
    }).env.wrappers.SimpleSokoban!;
    expect(wrapOptionsOf(w)).toEqual({
      rewardScale: { scale: 1, shift: 0, clip: [-1, 1] },
      formatPenalty: -0.1,
      observation: { maxChars: 40, keep: 'tail' },
    });
  });

  it('rejects wrappers for a tag no entry uses, a reversed clip and unknown keys', () => {
    expect(() =>
      checkRunConfig(loadConfig({ overrides: ['env.wrappers.SimpleSokobn={rewardScale: 2}'] }), { skipModel: true }),
    ).toThrow(/`env.wrappers.SimpleSokobn`.*Did you mean `SimpleSokoban`/);
    expect(() =>
      checkRunConfig(loadConfig({ overrides: ['env.wrappers.SimpleSokoban={rewardClip: [1, -1]}'] }), {
        skipModel: true,
      }),
    ).toThrow(/env.wrappers.SimpleSokoban.rewardClip/);
    expect(() => loadConfig({ overrides: ['env.wrappers.SimpleSokoban={rewardScal: 2}'] })).toThrow(/rewardScal/);
  });
});
