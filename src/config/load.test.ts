import '../envs/index.js'; // the built-in environments
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentConfig } from '../agent/index.js';
import { ConfigError } from '../util/index.js';
import {
  defaultConfig,
  listPresets,
  loadConfig,
  loadSavedConfig,
  presetPath,
  readConfigLayers,
  resolveConfig,
  saveConfig,
} from './load.js';
import { parseOverride } from './overrides.js';

const err = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
};
const withOverrides = (...o: string[]) => resolveConfig([], o);

describe('defaults', () => {
  it('are RAGEN base.yaml values where RAGEN has one', () => {
    const c = defaultConfig();
    expect(c.seed).toEqual({ train: 10000, val: 123 });
    expect(c.algo.advEstimator).toBe('gae');
    expect([c.algo.clipRatioLow, c.algo.clipRatioHigh, c.algo.clipRatioC]).toEqual([0.2, 0.28, 3]);
    expect(c.algo.entropyCoeff).toBe(0.001);
    expect(c.algo.filter).toMatchObject({
      strategy: 'top_p',
      value: 1,
      includeZero: true,
      topPMode: 'linear',
      selectionEps: 0.01,
    });
    expect([c.trainer.actorLr, c.trainer.criticLr, c.trainer.steps, c.trainer.valEvery]).toEqual([1e-6, 1e-5, 200, 10]);
    expect(c.env.train).toEqual([{ tag: 'SimpleSokoban', groups: 8, groupSize: 16 }]);
    expect(c.agent).toMatchObject({
      maxTurns: 5,
      maxActionsPerTurn: 2,
      formatPenalty: -0.1,
      contextWindowMode: 'full',
      maxContextWindow: null,
      maxNewTokens: 400,
    });
  });

  it("hold the agent loop's own settings in `agent`, with the agent module's defaults", () => {
    expect(defaultConfig().agent).toEqual(agentConfig({}));
  });

  it('are frozen all the way down', () => {
    const c = defaultConfig();
    expect(Object.isFrozen(c) && Object.isFrozen(c.algo.filter) && Object.isFrozen(c.env.train[0])).toBe(true);
    expect(() => ((c.algo as any).gamma = 0.5)).toThrow(TypeError);
  });
});

describe('overrides', () => {
  it('parse values as YAML scalars and flow collections', () => {
    expect(parseOverride('trainer.actorLr=1e-5').value).toBe(1e-5);
    expect(parseOverride('agent.enableThink=false').value).toBe(false);
    expect(parseOverride('agent.maxContextWindow=null').value).toBe(null);
    expect(parseOverride('model.lora.targetModules=[q_proj, v_proj]').value).toEqual(['q_proj', 'v_proj']);
    expect(parseOverride('+model.path=models/x').path).toEqual(['model', 'path']);
    expect(parseOverride('name=').value).toBe('');
  });

  it('set nested keys, list items by index, and append to lists', () => {
    const c = withOverrides(
      'algo.kl.coef=0.01',
      'env.train.0.groups=2',
      'env.train.1.tag=Bandit',
      'env.config.Bandit.loArmScore=0.2',
    );
    expect(c.algo.kl.coef).toBe(0.01);
    expect(c.env.train).toEqual([
      { tag: 'SimpleSokoban', groups: 2, groupSize: 16 },
      { tag: 'Bandit', groups: 8, groupSize: 16 },
    ]);
    expect(c.env.config).toEqual({ Bandit: { loArmScore: 0.2 } });
  });

  it('apply in order, the last one winning', () => {
    expect(withOverrides('trainer.steps=5', 'trainer.steps=7').trainer.steps).toBe(7);
  });

  it('expand the filter shorthands', () => {
    expect(withOverrides('algo.filter.topP=0.9').algo.filter).toMatchObject({ strategy: 'top_p', value: 0.9 });
    expect(withOverrides('algo.filter.topK=0.25').algo.filter).toMatchObject({ strategy: 'top_k', value: 0.25 });
    expect(resolveConfig([{ source: 'p.yaml', data: { algo: { filter: { minP: 0.5 } } } }]).algo.filter).toMatchObject({
      strategy: 'min_p',
      value: 0.5,
    });
  });
});

describe('config errors', () => {
  it('name an unknown key, its value and the nearest valid key', () => {
    expect(err(() => withOverrides('algo.filter.topp=0.9'))).toBe(
      'Unknown config key `algo.filter.topp` = 0.9 (override `algo.filter.topp=0.9`). Did you mean `algo.filter.topP`?',
    );
    expect(err(() => withOverrides('trainer.gamma=0.9'))).toBe(
      'Unknown config key `trainer.gamma` = 0.9 (override `trainer.gamma=0.9`). Did you mean `algo.gamma`?',
    );
    expect(err(() => withOverrides('env.train.0.grups=3'))).toBe(
      'Unknown config key `env.train.0.grups` = 3 (override `env.train.0.grups=3`). Did you mean `env.train.0.groups`?',
    );
  });

  it('list the valid keys when nothing is close', () => {
    expect(err(() => withOverrides('algo.filter.zzzzzzzz=1'))).toBe(
      'Unknown config key `algo.filter.zzzzzzzz` = 1 (override `algo.filter.zzzzzzzz=1`). Valid keys in `algo.filter`: strategy, value, metric, type, includeZero, topPMode, selectionEps, percentileLow, percentileHigh.',
    );
  });

  it('translate RAGEN keys', () => {
    expect(err(() => withOverrides('actor_rollout_ref.rollout.rollout_filter_value=0.9'))).toBe(
      "Unknown config key `actor_rollout_ref.rollout.rollout_filter_value` = 0.9 (override `actor_rollout_ref.rollout.rollout_filter_value=0.9`): that is RAGEN's name; here it is `algo.filter.value`.",
    );
  });

  it('name the file and the full key for unknown keys in a preset', () => {
    const layer = { source: 'configs/x.yaml', data: { algoo: { gama: 0.9 } } };
    expect(err(() => resolveConfig([layer]))).toBe(
      'Unknown config key `algoo.gama` = 0.9 (configs/x.yaml). Did you mean `algo.gamma`?',
    );
    const ragen = { source: 'configs/x.yaml', data: { algorithm: { gamma: 0.9 } } };
    expect(err(() => resolveConfig([ragen]))).toBe(
      "Unknown config key `algorithm.gamma` = 0.9 (configs/x.yaml): that is RAGEN's name; here it is `algo.gamma`.",
    );
  });

  it('treat keys of features that do not exist (yet) as unknown keys', () => {
    for (const [o, shown] of [
      ['model.dtype=bfloat16', '"bfloat16"'],
      ['model.threads=2', '2'],
      ['model.openai.baseUrl=http://x', '"http://x"'],
    ] as const) {
      const key = o.split('=')[0];
      expect(err(() => withOverrides(o))).toBe(
        `Unknown config key \`${key}\` = ${shown} (override \`${o}\`). Valid keys in \`model\`: path, chatTemplate, engine, torch, backend, frozenDtype, gradientCheckpointing, lora, vision, critic, reference.`,
      );
    }
    expect(err(() => resolveConfig([{ source: 'old.yaml', data: { model: { engine: 'jax' } } }]))).toMatch(
      /^Bad config value `model.engine` = "jax" \(old.yaml\).*expected one of local, torch/,
    );
    expect(err(() => withOverrides('model.backend=cuda'))).toMatch(
      /^Bad config value `model.backend` = "cuda" .*expected one of auto, native, wasm, js, js64/,
    );
  });

  it('point a mistyped leaf at the same leaf elsewhere, but not at a merely similar one', () => {
    expect(err(() => withOverrides('generation.maxNewTokens=5'))).toMatch(/Did you mean `agent.maxNewTokens`\?$/);
    expect(err(() => withOverrides('agent.contextMode=full'))).toMatch(/Did you mean `agent.contextWindowMode`\?$/);
    expect(err(() => withOverrides('model.dtype=float32'))).not.toMatch(/Did you mean/);
  });

  it('name our key for the RAGEN keys whose names differ most', () => {
    expect(err(() => withOverrides('agent_proxy.use_turn_scores=true'))).toMatch(/here it is `agent.useTurnScores`\.$/);
    expect(err(() => withOverrides('agent_proxy.max_context_window=2'))).toMatch(/here it is `agent.maxContextWindow`/);
    expect(err(() => withOverrides('actor_rollout_ref.actor.clip_ratio_c=3'))).toMatch(
      /here it is `algo.clipRatioC`\.$/,
    );
    expect(err(() => withOverrides('actor_rollout_ref.rollout.response_length=64'))).toMatch(
      /here it is `agent.maxNewTokens`\.$/,
    );
  });

  it('give the reason for bad values', () => {
    expect(err(() => withOverrides('algo.clipRatioLow=-0.5'))).toBe(
      'Bad config value `algo.clipRatioLow` = -0.5 (override `algo.clipRatioLow=-0.5`): must be >= 0.',
    );
    expect(err(() => withOverrides('algo.advEstimator=grop'))).toBe(
      'Bad config value `algo.advEstimator` = "grop" (override `algo.advEstimator=grop`): expected one of gae, bi_level_gae, grpo, dr_grpo, rloo, reinforce_pp, reinforce_pp_baseline. Did you mean `grpo`?',
    );
    expect(err(() => withOverrides('trainer.steps=ten'))).toBe(
      'Bad config value `trainer.steps` = "ten" (override `trainer.steps=ten`): expected a number, got a string.',
    );
    expect(err(() => withOverrides('trainer.steps=1.5'))).toBe(
      'Bad config value `trainer.steps` = 1.5 (override `trainer.steps=1.5`): expected an integer, got a non-integer number.',
    );
    expect(err(() => withOverrides('env.train=[{groups: 3}]'))).toMatch(
      /^Bad config: `env.train.0` has neither `tag` nor `agent`; give a built-in env/,
    );
  });

  it('attribute a bad value to the layer that set it', () => {
    const a = { source: 'a.yaml', data: { algo: { gamma: 2 } } };
    const b = { source: 'b.yaml', data: { trainer: { steps: 3 } } };
    expect(err(() => resolveConfig([a, b]))).toBe('Bad config value `algo.gamma` = 2 (a.yaml): must be <= 1.');
    expect(err(() => resolveConfig([a, b], ['algo.gamma=3']))).toBe(
      'Bad config value `algo.gamma` = 3 (override `algo.gamma=3`): must be <= 1.',
    );
  });

  it('report every problem at once', () => {
    expect(err(() => withOverrides('trainer.steps=0', 'algo.gamma=2')).split('\n')).toHaveLength(2);
  });

  it('check rules across keys', () => {
    expect(err(() => withOverrides('agent.maxContextWindow=3'))).toBe(
      'Bad config value `agent.maxContextWindow` = 3 (override `agent.maxContextWindow=3`): needs `contextWindowMode` = "limited_multi_turn" or "single_turn"; "full" always keeps every turn (bound its length with `maxContextTokens`). Set it to null, or change the mode.',
    );
    expect(withOverrides('agent.contextWindowMode=single_turn', 'agent.maxContextWindow=3').agent).toMatchObject({
      contextWindowMode: 'single_turn',
      maxContextWindow: 3,
    });
    expect(err(() => withOverrides('trainer.microBatchSize=64'))).toMatch(
      /`trainer.microBatchSize` = 64 is larger than `trainer.miniBatchSize` = 32/,
    );
    expect(err(() => withOverrides('env.train.1.tag=Bandit', 'env.train.1.groupSize=4'))).toBe(
      "Bad config: `env.train.1.groupSize` = 4 differs from `env.train.0.groupSize` = 16; all groups of a step have one size (as RAGEN's es_manager).",
    );
    expect(err(() => withOverrides('algo.filter.topP=1.5'))).toMatch(
      /`algo.filter.value` = 1.5 must be <= 1 with `algo.filter.strategy` = "top_p"/,
    );
    expect(
      err(() => resolveConfig([{ source: 'p.yaml', data: { algo: { filter: { strategy: 'top_k', topP: 0.5 } } } }])),
    ).toBe(
      'Config `algo.filter.topP` (p.yaml) is shorthand for `algo.filter.strategy` + `algo.filter.value`; set either the shorthand or `algo.filter.strategy`, not both.',
    );
  });

  it('reject malformed overrides', () => {
    expect(err(() => withOverrides('trainer.steps'))).toBe(
      'Bad override `trainer.steps`: expected `dotted.key=value`, e.g. `trainer.steps=100` or `algo.filter.topP=0.9`.',
    );
    expect(err(() => withOverrides('env.train.3.tag=Bandit'))).toBe(
      'Bad override `env.train.3.tag=Bandit`: `env.train` is a list of 1 item(s); use an index from 0 to 1 (1 appends).',
    );
  });
});

describe('presets', () => {
  const presets = listPresets();

  it('include one per environment plus algorithm and filter switches', () => {
    for (const p of [
      'sokoban-ppo',
      'frozenlake-ppo',
      'bandit-ppo',
      'countdown-ppo',
      'metamathqa-ppo',
      'sudoku-ppo',
      '2048-ppo',
      'rubikscube-ppo',
      'algo/grpo',
      'filter/top-p-0.9',
    ]) {
      expect(presets).toContain(p);
    }
  });

  it.each(presets)('%s loads and validates', (name) => {
    const c = loadConfig({ config: name });
    expect(c.env.train.length).toBeGreaterThan(0);
  });

  it('merge in order: a switch over an env preset, then overrides', () => {
    const c = loadConfig({ config: ['bandit-ppo', 'algo/grpo', 'filter/top-p-0.9'], overrides: ['trainer.steps=3'] });
    expect(c.env.train[0]!.tag).toBe('Bandit');
    expect(c.algo).toMatchObject({ advEstimator: 'grpo', lossAgg: 'seq-mean-token-mean' });
    expect(c.algo.filter).toMatchObject({ value: 0.9, topPMode: 'softmax' });
    expect(c.trainer.steps).toBe(3);
  });

  it('follow `extends` chains, the child winning', () => {
    const c = loadConfig({ config: 'sokoban-grpo' });
    expect(c.algo.advEstimator).toBe('grpo');
    expect(c.trainer.actorLr).toBe(1e-4); // from base.yaml via sokoban-ppo.yaml
    expect(c.algo.filter).toMatchObject({ strategy: 'top_p', value: 0.9 }); // from filter/top-p-0.9.yaml via sokoban-ppo.yaml
    expect(readConfigLayers(presetPath('sokoban-grpo')).map((l) => l.source.replace(/^.*configs\//, ''))).toEqual([
      'base.yaml',
      'filter/top-p-0.9.yaml',
      'sokoban-ppo.yaml',
      'algo/grpo.yaml',
      'sokoban-grpo.yaml',
    ]);
  });

  it('suggest the nearest preset for a typo', () => {
    expect(err(() => loadConfig({ config: 'sokoban-pp' }))).toMatch(
      /^Config `sokoban-pp` is neither a file nor a preset. Did you mean `sokoban-ppo`\?/,
    );
  });

  it('detect `extends` cycles and bad YAML', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-cfg-'));
    writeFileSync(join(dir, 'a.yaml'), 'extends: b.yaml\n');
    writeFileSync(join(dir, 'b.yaml'), 'extends: a.yaml\n');
    expect(err(() => loadConfig({ config: join(dir, 'a.yaml') }))).toMatch(/extends itself/);
    writeFileSync(join(dir, 'bad.yaml'), 'algo: [\n');
    expect(err(() => loadConfig({ config: join(dir, 'bad.yaml') }))).toMatch(/is not valid YAML/);
    writeFileSync(join(dir, 'list.yaml'), '- a\n');
    expect(err(() => loadConfig({ config: join(dir, 'list.yaml') }))).toMatch(/must hold a YAML mapping/);
  });
});

describe('model paths in a YAML file', () => {
  it("resolve next to the file when they are no directory from the working directory; one that is stays the user's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-model-rel-'));
    mkdirSync(join(dir, 'proj', 'weights', 'm'), { recursive: true });
    mkdirSync(join(dir, 'elsewhere', 'weights', 'm'), { recursive: true });
    const file = join(dir, 'proj', 'run.yaml');
    writeFileSync(file, 'model:\n  path: weights/m\n  critic: {path: weights/m}\n');
    const cwd = process.cwd();
    try {
      process.chdir(dir); // no weights/ here: the file's neighbour is meant
      const beside = loadConfig({ config: file });
      expect(beside.model.path).toBe(join(dir, 'proj', 'weights', 'm'));
      expect(beside.model.critic.path).toBe(join(dir, 'proj', 'weights', 'm'));
      process.chdir(join(dir, 'elsewhere')); // weights/m exists here: it is the user's path
      expect(loadConfig({ config: file }).model.path).toBe('weights/m');
      expect(loadConfig({ config: 'bandit-ppo' }).model.path).toBe('ragen-tiny'); // a name, resolved when the run starts
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('saved configs', () => {
  it('reproduce the resolved config exactly', () => {
    const c = loadConfig({
      config: '2048-ppo',
      overrides: ['trainer.actorLr=3e-7', 'name=x.1', 'env.config.game_2048.twoProb=0.85'],
    });
    const dir = mkdtempSync(join(tmpdir(), 'ragen-run-'));
    const file = saveConfig(c, dir);
    expect(readFileSync(file, 'utf8')).toMatch(/^# Resolved ragen-ts config/);
    expect(loadSavedConfig(dir)).toEqual(c);
    expect(loadSavedConfig(file, ['trainer.steps=9']).trainer.steps).toBe(9);
  });
});

describe('the torch engine across machines (model.torch.nodes, model.torch.master)', () => {
  it('needs master with several nodes, takes host:port forms, and refuses other values by key', () => {
    expect(err(() => withOverrides('model.torch.nodes=2'))).toMatch(
      /`model.torch.master`.*several nodes need `master`/,
    );
    for (const master of ['10.0.0.1:29500', 'node-0.cluster:29500', '[fe80::1]:29500']) {
      expect(withOverrides('model.torch.nodes=2', `model.torch.master='${master}'`).model.torch.master).toBe(master);
    }
    for (const bad of ['10.0.0.1', 'host:port', 'a b:1'])
      expect(err(() => withOverrides(`model.torch.master=${bad}`))).toMatch(
        /`model.torch.master`.*host:port, e.g. 10.0.0.1:29500/,
      );
    expect(withOverrides().model.torch).toMatchObject({ nodes: 1, master: null });
  });
});
