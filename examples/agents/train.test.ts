// Issue 38 item 1: each guess-number agent (AI SDK, OpenAI Agents SDK, LangChain.js) trains through `ragen train`
// with its preset, on models/guess-number-tiny: one step of one group of two episodes, validation on two tasks
// before and after, every episode a program that finished with a reward, a finite loss and a checkpoint.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { readMetricsFile } from '../../src/metrics/index.js';
import { train } from '../../src/train/index.js';
import { GUESS_NUMBER_TINY } from './e2e.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-agents-train-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PRESETS = {
  'ai-sdk': 'guessnumber-agent-ppo',
  'openai-agents': 'guessnumber-agent-openai-agents-ppo',
  langchain: 'guessnumber-agent-langchain-ppo',
} as const;

describe("item 1: each framework's guess-number agent trains with `ragen train`", () => {
  it.each(Object.entries(PRESETS))(
    '%s (%s): a step through the gateway, validated before and after',
    async (name, preset) => {
      const runDir = join(root, name);
      const config = loadConfig({
        config: preset,
        overrides: [
          `model.path=${GUESS_NUMBER_TINY}`,
          'trainer.steps=1',
          'trainer.valEvery=1',
          'trainer.miniBatchSize=2',
          'trainer.microBatchSize=2',
          'trainer.collapse.every=0',
          'env.train.0.groups=1',
          'env.train.0.groupSize=2',
          'env.val.0.groups=2',
          `logging.runDir=${runDir}`,
        ],
      });
      expect(config.env.train[0]!.agent!.command).toContain(`guess-number-${name}/agent.mjs`);
      const r = await train({ config });
      expect(r.lastStep).toBe(1);
      const records = readMetricsFile(join(runDir, 'metrics.jsonl'));
      const step = records.find((x) => x.step === 1 && x['gateway/calls'] !== undefined)!;
      // both episodes ran the program to its reward (none crashed, timed out or went unreported)
      expect([
        step['gateway/episodes_ok'],
        step['gateway/episodes_crashed'],
        step['gateway/episodes_no_reward'],
        step['gateway/episodes_timeout'],
      ]).toEqual([2, 0, 0, 0]);
      expect(step['gateway/calls']).toBeGreaterThanOrEqual(2);
      expect(Number.isFinite(step['actor/pg_loss'])).toBe(true);
      expect(step['gateway/unparsed_tool_call_rate']).toBeGreaterThanOrEqual(0);
      const vals = records.filter((x) => x['val/GuessNumberAgent/success'] !== undefined).map((x) => x.step);
      expect(vals).toEqual([0, 1]);
      const rollouts = readFileSync(join(runDir, 'rollouts', 'step-1.jsonl'), 'utf8')
        .trim()
        .split('\n');
      expect(rollouts).toHaveLength(2);
      expect(readdirSync(runDir)).toContain('checkpoints');
    },
    240_000,
  );
});
