// Runs examples/starpo-sokoban.ts for two tiny steps on a micro model, so the example cannot rot: it must still
// type-check against the public API and train (finite losses, non-zero gradients, validation before and after).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeMicroModel } from '../src/train/testing.js';
import { DEFAULTS, parseCommandLine, starpo, type Args } from './starpo-sokoban.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-example-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const tiny = (extra: Partial<Args>): Args => ({
  ...DEFAULTS,
  model,
  steps: 2,
  groups: 2,
  groupSize: 4,
  maxTurns: 2,
  maxNewTokens: 6,
  miniBatchSize: 8,
  actorLr: 1e-3,
  criticLr: 1e-3,
  filterTopP: 1,
  valEpisodes: 2,
  verbose: false,
  ...extra,
});

describe('examples/starpo-sokoban.ts', () => {
  it.each(['grpo', 'gae'] as const)(
    'runs two StarPO steps with %s advantages: finite losses, non-zero gradients',
    async (advantage) => {
      const r = await starpo(tiny({ advantage }));
      expect(r.steps.map((s) => s.step)).toEqual([1, 2]);
      for (const s of r.steps) {
        expect(s.keptGroups).toBe(2);
        expect(Number.isFinite(s.pgLoss)).toBe(true);
        expect(s.gradNorm).toBeGreaterThan(0);
        expect(s.success).toBeGreaterThanOrEqual(0);
        if (advantage === 'gae') expect(Number.isFinite(s.vfLoss)).toBe(true);
        else expect(s.vfLoss).toBeNull();
      }
      expect(r.valBefore).not.toBeNull();
      expect(r.valAfter).not.toBeNull();
    },
  );

  it('parses its command line and names a bad flag value', () => {
    expect(parseCommandLine(['--steps', '3', '--advantage', 'gae', '--verbose', 'false'])).toMatchObject({
      steps: 3,
      advantage: 'gae',
      verbose: false,
    });
    expect(() => parseCommandLine(['--steps', 'many'])).toThrow(/--steps takes a number/);
    expect(() => parseCommandLine(['--advantage', 'ppo'])).toThrow(/grpo or gae/);
  });
});
