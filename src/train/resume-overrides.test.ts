import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResumeOverrides, loadSavedConfig, resumable } from '../config/index.js';
import '../envs/index.js';
import { ConfigError } from '../util/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-resume-keys-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('overrides on resume', () => {
  it('names each key that cannot change on resume, shorthands by the keys they set', () => {
    expect(() =>
      checkResumeOverrides(['trainer.steps=10', 'trainer.actorLr=1e-5', 'trainer.valEvery=5', 'logging.console=none']),
    ).not.toThrow();
    expect(() => checkResumeOverrides(['model.lora.rank=8'])).toThrow(
      /`model\.lora\.rank` \(from `model\.lora\.rank=8`\)/,
    );
    expect(() => checkResumeOverrides(['algo.filter.topP=0.9'])).toThrow(/`algo\.filter\.strategy`/);
    expect(resumable('logging.runDir')).toBe(false);
    expect(resumable('env.train')).toBe(false);
    expect(resumable('generation.val.greedy')).toBe(true);
  });

  it('a refused override leaves the run untouched; an allowed one is applied for real', async () => {
    const dir = join(root, 'run');
    await train({ config: microConfig(model, dir), stopAfter: 1 });
    const metrics = readFileSync(join(dir, 'metrics.jsonl'), 'utf8');
    await expect(train({ resume: dir, overrides: ['model.lora.rank=8'] })).rejects.toThrow(ConfigError);
    expect(readFileSync(join(dir, 'metrics.jsonl'), 'utf8')).toBe(metrics);
    const r = await train({ resume: dir, overrides: ['trainer.steps=3'] });
    expect(r.lastStep).toBe(3);
    expect(r.config.trainer.steps).toBe(3);
  });

  it('the run directory says what a resume changed: config.yaml as now in effect, and a line in resumes.jsonl', async () => {
    const dir = join(root, 'logged');
    await train({ config: microConfig(model, dir), stopAfter: 1 });
    expect(existsSync(join(dir, 'resumes.jsonl'))).toBe(false);
    await train({ resume: dir, overrides: ['trainer.steps=3', 'trainer.actorLr=5e-4'], stopAfter: 2 });
    await train({ resume: dir });
    const run = loadSavedConfig(join(dir, 'config.yaml'));
    expect(run.trainer.steps).toBe(3);
    expect(run.trainer.actorLr).toBe(5e-4);
    const lines = readFileSync(join(dir, 'resumes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map(({ time: _t, ...rest }) => rest)).toEqual([
      { after_step: 1, overrides: ['trainer.steps=3', 'trainer.actorLr=5e-4'], fresh_optimizer: false },
      { after_step: 2, overrides: [], fresh_optimizer: false },
    ]);
  });
});
