// A checkpoint whose weights and optimizer state are split into Hugging Face index + shards (a tiny
// trainer.checkpointShardBytes forces many) resumes exactly: the metrics and weights of an uninterrupted run.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { loadWeights } from '../model/index.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-sharded-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SHARD = 8192; // bytes: the micro model's ~100 kB of weights (and twice that of AdamW moments) split many ways

/** The shard files of `file` under `dir` per its index, after checking the index's own bookkeeping. */
function shardsOf(dir: string, file: string): string[] {
  expect(existsSync(join(dir, file)), `${file} should be sharded`).toBe(false);
  const index = JSON.parse(readFileSync(join(dir, `${file}.index.json`), 'utf8')) as {
    metadata: { total_size: number };
    weight_map: Record<string, string>;
  };
  const shards = [...new Set(Object.values(index.weight_map))];
  const stem = file.replace('.safetensors', '');
  for (const s of shards)
    expect(s).toMatch(new RegExp(`^${stem}-\\d{5}-of-${String(shards.length).padStart(5, '0')}\\.safetensors$`));
  expect(
    readdirSync(dir)
      .filter((f) => f.startsWith(`${stem}-`))
      .sort(),
  ).toEqual([...shards].sort());
  return shards;
}

describe('a checkpoint with sharded weights and optimizer state', () => {
  it(
    'is written in the index + shards layout and resumes to the metrics and weights of an uninterrupted run',
    { timeout: 300_000 },
    async () => {
      const extra = ['trainer.steps=3', `trainer.checkpointShardBytes=${SHARD}`];
      const full = await train({ config: microConfig(model, join(root, 'full'), extra) });
      const dir = join(root, 'resumed');
      await train({ config: microConfig(model, dir, extra), stopAfter: 2 });

      const step2 = join(dir, 'checkpoints', 'step-2');
      for (const [folder, file] of [
        [step2, 'model.safetensors'],
        [join(step2, 'critic'), 'model.safetensors'],
        [join(step2, 'optimizer'), 'policy.safetensors'],
        [join(step2, 'optimizer'), 'critic.safetensors'],
      ] as const) {
        expect(shardsOf(folder, file).length, `${folder}/${file}`).toBeGreaterThan(2);
      }
      const moments = await loadWeights(join(step2, 'optimizer'), 'policy.safetensors');
      const params = await loadWeights(step2);
      expect(moments.size).toBe(2 * params.size); // m.<name> and v.<name> for every policy weight
      expect(moments.get('v.model.norm.weight')!.data.some((x) => x > 0)).toBe(true); // real second moments, not zeros

      const resumed = await train({ resume: dir });
      expect(resumed.startStep).toBe(2);
      expect(deterministic(readMetricsFile(join(dir, 'metrics.jsonl')))).toEqual(
        deterministic(readMetricsFile(join(full.runDir, 'metrics.jsonl'))),
      );
      for (const part of ['', 'critic']) {
        const [a, b] = [
          await loadWeights(join(dir, 'checkpoints', 'step-3', part)),
          await loadWeights(join(full.runDir, 'checkpoints', 'step-3', part)),
        ];
        expect([...a.keys()]).toEqual([...b.keys()]);
        for (const [name, w] of a)
          expect(Buffer.from(w.data.buffer).equals(Buffer.from(b.get(name)!.data.buffer)), `${part}/${name}`).toBe(
            true,
          );
      }
    },
  );
});
