// Training over envs served by `EnvServer` on loopback gives the same metrics, step by step, as over in-process
// envs with the same seeds: a real run (Bandit PPO on a micro model, train + validation), and StarPO steps whose
// scripted answers pull real arms, so every env step goes over the wire.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../envs/index.js';
import { readMetricsFile } from '../../metrics/index.js';
import { EnvGroups } from '../../agent/index.js';
import { KLController } from '../../algo/index.js';
import { envGroupsOptions } from '../../config/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../../tokenizer/index.js';
import { deterministic, microConfig, RecordingEngine, writeMicroModel } from '../../train/testing.js';
import { starpoStep, train } from '../../train/index.js';
import { EnvServer } from './index.js';

let root: string;
let model: string;
let server: EnvServer;
let port: number;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-remote-train-'));
  model = await writeMicroModel(join(root, 'model'));
  server = new EnvServer({ envIds: ['Bandit', 'BanditTest'], port: 0, log: () => {} });
  port = await server.listen();
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

/** bandit-ppo's shape, tiny: one turn, one pull, 2 steps, validation after step 2. */
function banditConfig(runDir: string, tag: (id: string) => string, extra: string[] = []) {
  return microConfig(model, runDir, [
    `env.train=[{tag: "${tag('Bandit')}", groups: 2, groupSize: 4}]`,
    `env.val=[{tag: "${tag('Bandit')}", groups: 4}, {tag: "${tag('BanditTest')}", groups: 4}]`,
    'agent.maxTurns=1',
    'agent.maxActionsPerTurn=1',
    'trainer.valEvery=2',
    ...extra,
  ]);
}

describe('training over remote envs', () => {
  it('bandit PPO over `remote:` envs gives the same metrics as over local envs with the same seeds', async () => {
    const local = await train({ config: banditConfig(join(root, 'local'), (id) => id) });
    const remote = await train({
      config: banditConfig(join(root, 'remote'), (id) => `remote:ws://127.0.0.1:${port}/${id}`),
    });
    const ml = deterministic(readMetricsFile(join(local.runDir, 'metrics.jsonl')));
    // Per-tag keys name the remote id (`train/Bandit@127.0.0.1:<port>/success`): map them back to compare.
    const unport = (r: Record<string, number>) =>
      Object.fromEntries(Object.entries(r).map(([k, v]) => [k.replace(`@127.0.0.1:${port}`, ''), v]));
    const mr = deterministic(readMetricsFile(join(remote.runDir, 'metrics.jsonl'))).map(unport);
    expect(ml.map((r) => r.step)).toEqual([1, 2]);
    expect(Object.keys(ml[1]!)).toContain('val/BanditTest/success');
    expect(mr).toEqual(ml);
    expect(remote.summaryText).toMatch(new RegExp(`BanditTest@127\\.0\\.0\\.1:${port}\\s+-\\s+\\d`)); // the last validation, per remote tag
    expect(server.stats.resets).toBeGreaterThanOrEqual(2 * 8 + 8); // every episode of both steps and of validation started over the wire
  }, 60_000);

  it('StarPO steps whose answers pull arms give the same rewards and metrics remotely as locally', async () => {
    const tokenizer = loadTokenizer(tinyTokenizerDir());
    // Pull the first or the second arm the prompt names, by batch position: rewards differ within groups.
    const script = (prompt: string, i: number) => {
      const arms = [...prompt.matchAll(/name: (\w+) or (\w+)\./g)].at(-1)!;
      return `pull</think><answer>${arms[1 + (i % 2)]}</answer><|im_end|>`;
    };
    const run = async (tag: (id: string) => string) => {
      const config = banditConfig(join(root, 'unused'), tag, ['agent.maxNewTokens=40']);
      const groups = new EnvGroups(envGroupsOptions(config, 'train'));
      const engine = new RecordingEngine(tokenizer, script);
      const ctx = {
        config,
        engine,
        tokenizer,
        agent: config.agent,
        groups,
        kl: new KLController({ type: 'fixed', klCoef: config.algo.kl.coef }),
        collapseEma: {},
      };
      const out = [];
      for (let step = 1; step <= 3; step++) out.push((await starpoStep(ctx, step)).metrics);
      await groups.close();
      return out.map((m) =>
        Object.fromEntries(
          Object.entries(m)
            .filter(([k]) => !k.startsWith('timing_s/') && !k.startsWith('perf/'))
            .map(([k, v]) => [k.replace(`@127.0.0.1:${port}`, ''), v]),
        ),
      );
    };
    const before = server.stats.steps;
    const local = await run((id) => id);
    const remote = await run((id) => `remote:ws://127.0.0.1:${port}/${id}`);
    expect(server.stats.steps - before).toBe(3 * 8); // one pull per episode, 8 episodes per step
    expect(local.some((m) => m['train/reward_std']! > 0)).toBe(true);
    expect(remote).toEqual(local);
  }, 60_000);
});
