// `env.train` / `env.val` entries are built-in envs (`tag`) or agent programs (`agent`): both shapes parse, a malformed
// entry is one sentence naming it, and the helpers split a config into its two kinds with their metric tags.
import '../envs/index.js'; // the built-in environments
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { loadConfig } from './load.js';
import { checkRunConfig } from './check.js';
import { agentEntries, entryTags, tagEntries } from './env-entries.js';
import { envGroupsOptions } from './rollout-options.js';

const AGENT = '{command: "node my-agent.mjs", timeoutS: 60}';

const SMALL = ['trainer.miniBatchSize=4', 'trainer.microBatchSize=4']; // a step of these entries has few episodes

function err(overrides: string[]): string {
  try {
    loadConfig({ overrides: [...SMALL, ...overrides] });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('env entries', () => {
  it("parse both shapes, with the agent block's defaults filled and metric tags `agent` / `agent-<i>` / name", () => {
    const one = loadConfig({
      overrides: [
        ...SMALL,
        `env.train=[{agent: ${AGENT}, groups: 2, groupSize: 4}]`,
        `env.val=[{tag: Bandit, groups: 3}, {agent: ${AGENT}, groups: 2}]`,
      ],
    });
    expect(one.env.train[0]!.agent).toMatchObject({
      command: 'node my-agent.mjs',
      timeoutS: 60,
      failureReward: 0,
      concurrency: 4,
    });
    expect(agentEntries(one, 'train').map((e) => [e.index, e.name, e.groups, e.groupSize])).toEqual([
      [0, 'agent', 2, 4],
    ]);
    expect(entryTags(one, 'val')).toEqual(['Bandit', 'agent']);
    expect(tagEntries(one, 'train')).toEqual([]);
    expect(envGroupsOptions(one, 'val').tags.map((t) => t.env)).toEqual(['Bandit']);
    expect(() => checkRunConfig(one, { skipModel: true })).not.toThrow();

    const two = loadConfig({
      overrides: [
        ...SMALL,
        `env.train=[{tag: Bandit, groups: 2, groupSize: 4}, {agent: ${AGENT}, groups: 1, groupSize: 4}, {agent: ${AGENT}, name: coder, groups: 1, groupSize: 4}, {agent: ${AGENT}, groups: 1, groupSize: 4}]`,
      ],
    });
    expect(entryTags(two, 'train')).toEqual(['Bandit', 'agent-1', 'coder', 'agent-3']);
  });

  it('load the config file docs/agents.md shows', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'agents.md'), 'utf8');
    const yaml = /## Training it with `ragen train`[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(yaml).toContain('- agent: {command: "node my-agent.mjs", timeoutS: 60}');
    const file = join(mkdtempSync(join(tmpdir(), 'ragen-entries-')), 'my-agent.yaml');
    writeFileSync(file, yaml!);
    const c = loadConfig({ config: file });
    expect(
      agentEntries(c, 'train').map((e) => [e.name, e.program.command, e.program.timeoutS, e.groups, e.groupSize]),
    ).toEqual([['agent', 'node my-agent.mjs', 60, 4, 8]]);
    expect(entryTags(c, 'val')).toEqual(['agent']);
    expect(() => checkRunConfig(c, { skipModel: true })).not.toThrow();
  });

  it('refuse an entry with both keys, with neither, a name on a tag entry, and clashing metric tags, naming the entry', () => {
    expect(err([`env.train=[{tag: Bandit, agent: ${AGENT}, groups: 2, groupSize: 4}]`])).toBe(
      'Bad config: `env.train.0` has both `tag` ("Bandit") and `agent`; an entry is a built-in env or an agent program, so keep one and move the other to an entry of its own.',
    );
    expect(err(['env.val=[{tag: Bandit}, {groups: 2}]'])).toMatch(
      /^Bad config: `env.val.1` has neither `tag` nor `agent`; give a built-in env/,
    );
    expect(err(['env.train=[{tag: Bandit, name: x, groups: 2, groupSize: 4}]'])).toMatch(
      /^Bad config: `env.train.0.name` = "x" is only for `agent` entries/,
    );
    expect(
      err([
        `env.train=[{agent: ${AGENT}, name: Bandit, groups: 1, groupSize: 4}, {tag: Bandit, groups: 1, groupSize: 4}]`,
      ]),
    ).toMatch(/two entries of `env.train` report as `Bandit`/);
  });

  it('name an unknown or bad key inside the agent block with the nearest valid one', () => {
    expect(err(['env.train=[{agent: {comand: "node a.mjs"}, groups: 2, groupSize: 4}]'])).toMatch(
      /^Unknown config key `env.train.0.agent.comand` = "node a.mjs" \(.*\)\. Did you mean `env.train.0.agent.command`\?/,
    );
    expect(err(['env.train=[{agent: {command: "node a.mjs", timeoutS: -1}, groups: 2, groupSize: 4}]'])).toMatch(
      /^Bad config value `env.train.0.agent.timeoutS` = -1 \(.*\): must be > 0\./,
    );
  });

  it('refuse async rollouts with agent entries, naming the key', () => {
    expect(err([`env.train=[{agent: ${AGENT}, groups: 2, groupSize: 4}]`, 'trainer.async.enabled=true'])).toMatch(
      /^Bad config: `trainer.async.enabled` = true, but `env.train` has agent entries/,
    );
  });
});
