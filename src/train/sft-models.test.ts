// The shipped base models under models/: Hugging Face layout within the size budget, config and tokenizer
// consistent, and one greedy turn per env of their SFT data is a well-formed <think>…</think><answer>…</answer>.
import '../envs/index.js'; // the built-in environments
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  EnvGroups,
  agentConfig,
  enginePolicy,
  parseResponse,
  prefillText,
  rollout,
  type AgentConfig,
} from '../agent/index.js';
import { LocalEngine } from '../engine/index.js';
import { findModelPath, isHubId } from '../model/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { checkRunConfig, listPresets, loadConfig } from '../config/index.js';

const modelsDir = join(tinyTokenizerDir(), '..');
const shipped = readdirSync(modelsDir).filter((d) => existsSync(join(modelsDir, d, 'config.json')));

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((n, f) => {
    const p = join(dir, f);
    return n + (statSync(p).isDirectory() ? dirBytes(p) : statSync(p).size);
  }, 0);
}

describe('shipped base models', () => {
  test('at least one is shipped, and all of models/ stays within 30 MB', () => {
    expect(shipped.length).toBeGreaterThan(0);
    expect(dirBytes(modelsDir)).toBeLessThan(30 * 1024 * 1024);
  });

  test.each(shipped)(
    '%s: config, weights and tokenizer agree; greedy turns are well-formed on a val seed of each env',
    async (name) => {
      const dir = join(modelsDir, name);
      for (const f of [
        'config.json',
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
        'sft_args.json',
        'README.md',
      ])
        expect(existsSync(join(dir, f)), f).toBe(true);
      const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
        vocab_size: number;
        torch_dtype: string;
      };
      const tokenizer = loadTokenizer(dir);
      expect(config.vocab_size).toBe(tokenizer.vocabSize);
      expect(config.torch_dtype).toBe('float32');
      const args = JSON.parse(readFileSync(join(dir, 'sft_args.json'), 'utf8')) as {
        envs: string[];
        envConfig: Record<string, Record<string, unknown>>;
        agent: AgentConfig;
      };
      const agent = agentConfig(args.agent);
      const engine = await LocalEngine.fromPretrained(dir, { decode: (ids) => tokenizer.decode(ids) });
      const groups = new EnvGroups({
        tags: args.envs.map((env) => ({ env, nGroups: 1, config: args.envConfig[env] ?? {}, maxTurns: 1 })),
        groupSize: 1,
        mode: 'val',
        seed: 123,
      });
      const batch = await rollout({
        groups,
        policy: enginePolicy(engine, tokenizer, agent, { temperature: 0 }),
        tokenizer,
        agent,
      });
      for (const e of batch.episodes) {
        const text = prefillText(agent) + e.turns[0]!.response;
        expect(text, e.tag).toMatch(/^<think>[^<]*<\/think><answer>[^<]+<\/answer>$/);
        expect(
          parseResponse(text, { enableThink: true, actionSep: agent.actionSep, maxActions: agent.maxActionsPerTurn })
            .ok,
        ).toBe(true);
      }
      engine.dispose();
    },
  );

  test('every env preset passes checkRunConfig with its shipped model, whose SFT used the same agent settings', () => {
    const presets = listPresets().filter((p) => !p.includes('/'));
    expect(presets).toContain('sokoban-ppo');
    const tested: string[] = [];
    for (const name of presets) {
      const config = loadConfig({ config: name });
      // Presets for Qwen-class models (the torch engine's, and the laptop preset on the local engine) name weights the
      // user downloads from the Hub: not shipped, and with no SFT arguments of ours even where a cache holds them.
      const dir = findModelPath(config.model.path);
      const ours = dir !== undefined && dir !== null && existsSync(join(dir, 'sft_args.json'));
      if (config.model.engine === 'torch' || (isHubId(config.model.path) && !ours)) continue;
      tested.push(name);
      expect(() => checkRunConfig(config), name).not.toThrow();
      const args = JSON.parse(
        readFileSync(join(findModelPath(config.model.path) ?? config.model.path, 'sft_args.json'), 'utf8'),
      ) as { agent: AgentConfig; envs: string[] };
      if (!config.env.train.every((e) => e.tag !== undefined && args.envs.includes(e.tag))) continue; // a preset for an env the model was not trained on
      const agent = config.agent;
      for (const key of [
        'contextWindowMode',
        'maxContextWindow',
        'enableThink',
        'actionSep',
        'maxNewTokens',
        'systemPrefix',
      ] as const)
        expect(agent[key], `${name}: agent.${key}`).toEqual(args.agent[key]);
    }
    expect(tested).toEqual(expect.arrayContaining(['sokoban-ppo', 'frozenlake-ppo', 'bandit-ppo']));
  });
});
