// Test helpers of the trainer: a micro random-init model in Hugging Face layout with the shipped tiny tokenizer,
// and a config for it, so trainer tests run in seconds without the shipped base models.
import { join } from 'node:path';
import { modelConfig, saveModel, Transformer } from '../model/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { loadConfig, type RagenConfig } from '../config/index.js';
import type { MetricRecord } from '../metrics/index.js';

/** Shape of the micro model. */
export interface MicroModelOptions {
  hiddenSize?: number;
  numLayers?: number;
  numHeads?: number;
  intermediateSize?: number;
  seed?: number;
}

/** Write a seeded random-init Qwen2-style model (vocab of the tiny tokenizer, tokenizer.json copied) into `dir`. */
export async function writeMicroModel(dir: string, o: MicroModelOptions = {}): Promise<string> {
  const tokDir = tinyTokenizerDir();
  const vocabSize = loadTokenizer(tokDir).vocabSize;
  const cfg = modelConfig({ vocabSize, hiddenSize: o.hiddenSize ?? 32, intermediateSize: o.intermediateSize ?? 64, numLayers: o.numLayers ?? 2, numHeads: o.numHeads ?? 4, maxPositionEmbeddings: 2048 });
  const model = Transformer.init(cfg, o.seed ?? 1);
  await saveModel(dir, model, { tokenizerPath: join(tokDir, 'tokenizer.json') });
  model.dispose();
  return dir;
}

/**
 * A tiny run on the micro model at `modelDir`: 2 SimpleSokoban groups of 4, 2 turns of 6 tokens, no validation
 * before training, no collapse diagnostics, console off; `overrides` (dotted `key=value`) go on top.
 */
export function microConfig(modelDir: string, runDir: string, overrides: readonly string[] = []): RagenConfig {
  return loadConfig({
    overrides: [
      `model.path=${modelDir}`,
      `logging.runDir=${runDir}`,
      'logging.console=none',
      'env.train=[{tag: SimpleSokoban, groups: 2, groupSize: 4}]',
      'env.val=[{tag: SimpleSokoban, groups: 4}]',
      'agent.maxTurns=2',
      'agent.maxNewTokens=6',
      'agent.maxContextTokens=1024',
      'trainer.steps=2',
      'trainer.miniBatchSize=4',
      'trainer.microBatchSize=2',
      'trainer.actorLr=1e-3',
      'trainer.criticLr=1e-3',
      'trainer.valEvery=0',
      'trainer.valBeforeTrain=false',
      'trainer.checkpointEvery=1',
      'trainer.keepCheckpoints=1',
      'trainer.collapse.every=0',
      ...overrides,
    ],
  });
}

/** Metric lines without wall-clock keys (time, timing_s/*, perf/*), which legitimately differ between runs. */
export function deterministic(records: MetricRecord[]): Record<string, number>[] {
  return records.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'time' && !k.startsWith('timing_s/') && !k.startsWith('perf/'))));
}
