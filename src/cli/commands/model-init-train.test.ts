// `ragen train --config sokoban-ppo-qwen` on a `ragen model init` Qwen3-shaped directory (full vocabulary, the shipped
// tokenizer, our template), shrunk to seconds: 2 steps with a checkpoint each, `--resume` for the third, equal to an
// uninterrupted 3-step run. The local engine runs it (the preset's torch engine on a CPU makes CI minutes longer).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../../metrics/index.js';
import { qwenTokenizerDir } from '../../tokenizer/index.js';
import { deterministic } from '../../train/testing.js';
import { runCli } from '../testing.js';
import { initModelDir } from './model-init.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-init-train-'));
  model = join(root, 'qwen3-tiny');
  await initModelDir(model, 'qwen3-tiny', { seed: 5 });
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const shrunk = (modelDir: string, runDir: string) => [
  '--config',
  'sokoban-ppo-qwen',
  `model.path=${modelDir}`,
  'model.engine=local',
  `logging.runDir=${runDir}`,
  'env.train=[{tag: CoordSokoban, groups: 1, groupSize: 2}]',
  'env.val=[{tag: CoordSokoban, groups: 1}]',
  'agent.maxTurns=2',
  'agent.maxNewTokens=4',
  'trainer.miniBatchSize=2',
  'trainer.microBatchSize=2',
  'trainer.valEvery=0',
  'trainer.valBeforeTrain=false',
  'trainer.checkpointEvery=1',
  'trainer.collapse.every=0',
];

describe('sokoban-ppo-qwen on a model init Qwen3-shaped directory', () => {
  it(
    'trains 2 steps with checkpoints, resumes for the third, and equals an uninterrupted 3-step run',
    { timeout: 600_000 },
    async () => {
      const full = join(root, 'full');
      const r0 = await runCli('train', ...shrunk(model, full), '--steps', '3');
      expect(r0.code, r0.err).toBe(0);
      const split = join(root, 'split');
      const r1 = await runCli('train', ...shrunk(model, split), '--steps', '3', '--stop-after', '2');
      expect(r1.code, r1.err).toBe(0);
      expect(readMetricsFile(join(split, 'metrics.jsonl')).map((r) => r.step)).toEqual([1, 2]);
      const r2 = await runCli('train', '--resume', split);
      expect(r2.code, r2.err).toBe(0);
      const a = deterministic(readMetricsFile(join(split, 'metrics.jsonl')));
      const b = deterministic(readMetricsFile(join(full, 'metrics.jsonl')));
      expect(a.map((r) => r['step'])).toEqual([1, 2, 3]);
      expect(a).toEqual(b);
      expect(Object.keys(a[2]!)).toContain('actor/pg_loss');
    },
  );

  // (`model.chatTemplate=model` would keep Qwen3's template here without a refusal: a random model never writes the
  // `</think>` that makes Qwen3's template rewrite history. src/tokenizer/run-tokenizer.test.ts checks the choice
  // itself.)
  it(
    "with Qwen3's own template, the preset's `auto` switches to ours and says so once",
    { timeout: 300_000 },
    async () => {
      const own = join(root, 'qwen3-own-template');
      await initModelDir(own, 'qwen3-tiny', { seed: 5 });
      copyFileSync(join(qwenTokenizerDir(), 'tokenizer_config.json'), join(own, 'tokenizer_config.json')); // Qwen3's as published
      const auto = await runCli('train', ...shrunk(own, join(root, 'auto')), '--steps', '1', 'agent.maxTurns=1');
      expect(auto.code, auto.err).toBe(0);
      const notes = auto.out.split('\n').filter((l) => l.includes('model.chatTemplate=auto'));
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatch(
        /is not append-only \(rendering turn 2 changes earlier text at character \d+.*\); using ragen's append-only Qwen template/,
      );
    },
  );
});
