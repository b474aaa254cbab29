import '../envs/index.js'; // the built-in environments
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import { loadConfig } from '../config/index.js';
import { sequenceBatch, type LocalEngine } from '../engine/index.js';
import { localEngineOptions, needsReference, openModels, withModelPaths } from './engine-setup.js';

describe('engine options from the config', () => {
  it('load LoRA only with a rank, a critic only for GAE estimators, a reference only for KL', () => {
    const ppo = loadConfig({
      config: 'sokoban-ppo',
      overrides: ['model.lora.rank=8', 'model.critic.mode=shared', 'model.backend=js'],
    });
    expect(localEngineOptions(ppo)).toEqual({
      backend: 'js',
      lora: { r: 8, alpha: 64, dropout: 0, targetModules: 'all-linear' },
      critic: 'shared',
      reference: false,
      seed: 10000,
      frozenDtype: 'float32',
      gradientCheckpointing: false,
    });
    const grpo = loadConfig({
      config: 'sokoban-grpo',
      overrides: ['algo.kl.useKlLoss=true', 'model.lora.targetModules=[q_proj]'],
    });
    expect(localEngineOptions(grpo)).toMatchObject({ lora: null, critic: null, reference: true });
  });

  it('pass model.vision.train to the local engine, which refuses it for a text-only model with the fix', async () => {
    const config = loadConfig({ config: 'bandit-ppo', overrides: ['model.vision.train=true'] });
    expect(localEngineOptions(config).visionTrain).toBe(true);
    await expect(openModels(config)).rejects.toThrow(
      /model.vision.train: true needs a vision-language checkpoint; .* is a text-only model. Set model.vision.train: false./,
    );
  });

  it('load the reference when asked to, or when a KL term is on', () => {
    expect(needsReference(loadConfig({ overrides: ['model.reference=always'] }))).toBe(true);
    expect(needsReference(loadConfig({ overrides: ['algo.kl.inReward=true'] }))).toBe(true);
    expect(needsReference(loadConfig({ overrides: ['model.reference=never'] }))).toBe(false);
    expect(needsReference(loadConfig({}))).toBe(false);
  });
});

describe('the model directories a run starts from', () => {
  it('are the shipped model for its name, and the cached snapshot for a Hub id (HF_HUB_CACHE), with no network', async () => {
    const shipped = await withModelPaths(loadConfig({ config: 'bandit-ppo' }));
    expect(shipped.model.path).toBe(resolve(import.meta.dirname, '../../models/ragen-tiny'));
    expect(Object.isFrozen(shipped.model)).toBe(true);
    const cache = mkdtempSync(join(tmpdir(), 'ragen-hf-cache-'));
    const snap = join(cache, 'models--org--m', 'snapshots', 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00');
    mkdirSync(snap, { recursive: true });
    writeFileSync(join(snap, 'config.json'), '{}');
    mkdirSync(join(cache, 'models--org--m', 'refs'));
    writeFileSync(join(cache, 'models--org--m', 'refs', 'main'), 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00');
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { HF_HUB_CACHE: cache, HF_HUB_OFFLINE: '1' });
      const hub = await withModelPaths(loadConfig({ overrides: ['model.path=org/m', 'model.critic.path=ragen-tiny'] }));
      expect(hub.model.path).toBe(snap);
      expect(hub.model.critic.path).toBe(shipped.model.path);
      await expect(withModelPaths(loadConfig({ overrides: ['model.path=org/absent'] }))).rejects.toThrow(
        join(cache, 'models--org--absent'),
      );
    } finally {
      process.env = saved;
      rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('resuming a vision-language run on the local engine', () => {
  it("loads a LoRA run's checkpoint whole (tower, adapters), and refuses a full fine-tune that keeps a reference", async () => {
    const root = mkdtempSync(join(tmpdir(), 'ragen-vl-resume-'));
    try {
      const base = join(root, 'base');
      await initModelDir(base, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 });
      const overrides = [
        `model.path=${base}`,
        'model.engine=local',
        'model.critic.mode=shared',
        'algo.kl.useKlLoss=true',
      ];
      const lora = loadConfig({ config: 'bandit-ppo', overrides: [...overrides, 'model.lora.rank=2'] });
      const first = await openModels(lora);
      const engine = first.engine as LocalEngine;
      expect(engine.vision).toBeDefined();
      const batch = sequenceBatch([[151644, 872, 198, 9707, 151645]]);
      await engine.backward(batch, { role: 'policy' }, (o) => ({ logprobs: o.logprobs.map(() => 1) }));
      await engine.optimizerStep('policy', { lr: 0.01 });
      const ckpt = join(root, 'ckpt');
      await engine.save(ckpt);
      const resumed = (await openModels(lora, ckpt)).engine as LocalEngine;
      expect(resumed.vision).toEqual(engine.vision);
      const params = (e: LocalEngine) => e.parameters('policy').map(([n, t]) => [n, [...t.toFloat32Array()]]);
      expect(params(resumed)).toEqual(params(engine));
      expect(
        params(resumed).some(([n, v]) => String(n).includes('lora_B') && (v as number[]).some((x) => x !== 0)),
      ).toBe(true);
      const [a, b] = [
        await engine.forward(batch, { role: 'reference' }),
        await resumed.forward(batch, { role: 'reference' }),
      ];
      expect(b.logprobs).toEqual(a.logprobs);
      engine.dispose();
      resumed.dispose();
      const full = loadConfig({ config: 'bandit-ppo', overrides });
      await expect(openModels(full, base)).rejects.toThrow(
        /Resuming the vision-language checkpoint .* with a full fine-tune's reference model is not written yet/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
