// Learning smoke test on the torch engine: the Bandit PPO run of learning.test.ts with `model.engine=torch` must raise
// greedy validation success by the same margin as the local engine does (the trainer's loss, torch's gradients).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { loadConfig } from '../config/index.js';
import { torchPythonForTests } from '../engine/torch-testing.js';
import { readMetricsFile } from '../metrics/index.js';
import { deterministic, LEARNING_SMOKE } from './testing.js';
import { train } from './trainer.js';

const { MODEL, MARGIN, SMOKE } = LEARNING_SMOKE; // the local smoke test's run and margin (see the reasoning there)
const python = torchPythonForTests();

const root = mkdtempSync(join(tmpdir(), 'ragen-learning-torch-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!python)('learning smoke test on the torch engine', () => {
  it('PPO (GAE, separate critic) with model.engine=torch raises greedy Bandit success by a clear margin within 6 steps', async () => {
    const config = loadConfig({
      config: 'bandit-ppo',
      overrides: [
        `model.path=${MODEL}`,
        'model.engine=torch',
        'model.torch.device=cpu',
        `logging.runDir=${join(root, 'ppo')}`,
        ...SMOKE,
      ],
    });
    const lines: string[] = [];
    const r = await train({ config, sinks: [{ write() {}, message: (line: string) => lines.push(line) }] });
    expect(r.lastStep).toBe(6);
    expect(lines.filter((l) => l.startsWith('torch engine:'))).toEqual([
      expect.stringMatching(/^torch engine: torch \S+ on cpu, float32$/),
    ]); // the run says what runs it
    const row = r.summary.find((s) => s.tag === 'Bandit');
    expect(row?.before, 'validation before training').toBeTypeOf('number');
    expect(row!.after!, `Bandit val success ${row!.before} -> ${row!.after}`).toBeGreaterThanOrEqual(
      row!.before! + MARGIN,
    );
  }, 180_000);

  it.each([
    ['a full fine-tune', []],
    ['LoRA (adapter-only checkpoints naming the base)', ['model.lora.rank=4', 'model.lora.alpha=8']],
  ])(
    '%s resumes exactly: 1 step + --resume to 2 gives the metrics of an uninterrupted 2-step run (optimizer state and reference through the worker)',
    async (name, lora) => {
      const extra = [
        ...lora,
        `model.path=${MODEL}`,
        'model.engine=torch',
        'model.torch.device=cpu',
        ...SMOKE,
        'trainer.steps=2',
        'trainer.valEvery=0',
        'trainer.valBeforeTrain=false',
        'env.train=[{tag: Bandit, groups: 2, groupSize: 4}]',
        'trainer.miniBatchSize=8',
        'trainer.microBatchSize=8',
        'trainer.checkpointEvery=1',
        'trainer.saveOptimizer=true',
        // GRPO with a KL loss (no critic: a cheaper step) still resumes the optimizer, the reference and the sampler.
        'algo.advEstimator=grpo',
        'algo.lossAgg=seq-mean-token-mean',
        'algo.kl.useKlLoss=true',
        'agent.maxNewTokens=24',
        'env.val=[{tag: Bandit, groups: 2}]',
      ];
      const full = await train({
        config: loadConfig({
          config: 'bandit-ppo',
          overrides: [...extra, `logging.runDir=${join(root, `full-${name}`)}`],
        }),
      });
      const dir = join(root, `resumed-${name}`);
      expect(
        (
          await train({
            config: loadConfig({ config: 'bandit-ppo', overrides: [...extra, `logging.runDir=${dir}`] }),
            stopAfter: 1,
          })
        ).lastStep,
      ).toBe(1);
      const second = await train({ resume: dir });
      expect([second.startStep, second.lastStep]).toEqual([1, 2]);
      const mf = deterministic(readMetricsFile(join(full.runDir, 'metrics.jsonl')));
      const mr = deterministic(readMetricsFile(join(dir, 'metrics.jsonl')));
      expect(mr.map((r) => r.step)).toEqual(mf.map((r) => r.step));
      expect(mr).toEqual(mf);
      expect(mr.at(-1)!['actor/grad_norm']).toBeGreaterThan(0);
      if (lora.length === 0) return;
      // the resumed run's step 2 was saved from an engine loaded from step 1: it names the model, not step 1
      for (const run of [full.runDir, dir]) {
        const step2 = join(run, 'checkpoints', 'step-2');
        expect(readdirSync(step2).filter((f) => f.startsWith('model'))).toEqual([]);
        const adapter = JSON.parse(readFileSync(join(step2, 'adapter', 'adapter_config.json'), 'utf8')) as {
          base_model_name_or_path: string;
        };
        expect(adapter.base_model_name_or_path).toBe(resolve(MODEL));
      }
    },
    180_000,
  );
});
