// A LoRA checkpoint is PEFT's: adapters naming their base directory, never a copy of the frozen base (issue 41:
// saving a 1.5B LoRA run wrote its whole base as float32 and doubled the run's peak memory).
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { backendAvailable, noGrad, setBackend } from '../tensor/index.js';
import { CheckpointError } from '../util/index.js';
import { ADAPTER_DIR, loadModel, saveModel, weightsDir } from './checkpoint.js';
import { modelConfig } from './config.js';
import { packSequences, tokenForward, unpack, ValueHead } from './forward.js';
import { LoraAdapters } from './lora.js';
import { Transformer } from './transformer.js';

// big enough that the base dominates a checkpoint: ~0.4M base parameters against ~7k adapter ones
const config = modelConfig({
  vocabSize: 512,
  hiddenSize: 64,
  intermediateSize: 192,
  numLayers: 4,
  numHeads: 4,
  numKvHeads: 2,
  eosTokenId: 511,
});

const tmp = () => mkdtempSync(join(tmpdir(), 'lora-ckpt-'));

/** Bytes of every file under `dir`. */
function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    n += e.isDirectory() ? dirBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size;
  return n;
}

const baseOf = (dir: string): unknown =>
  JSON.parse(readFileSync(join(dir, ADAPTER_DIR, 'adapter_config.json'), 'utf8')).base_model_name_or_path;

function logprobs(model: Transformer): Float32Array[] {
  const batch = packSequences([
    [1, 2, 3, 4, 5],
    [9, 8, 7],
  ]);
  return noGrad(() => unpack(tokenForward(model, batch).logprobs!.toFloat32Array(), batch));
}

/** A base model written to disk, loaded back, with trained-looking (non-zero) adapters attached. */
async function loraOverSavedBase(opts: { frozenBf16?: boolean } = {}): Promise<{ base: string; model: Transformer }> {
  const base = tmp();
  const init = Transformer.init(config, 3, 0.3);
  await saveModel(base, init);
  init.dispose();
  const { model } = await loadModel(base, opts);
  const lora = LoraAdapters.attach(model, { r: 2, alpha: 4 }, 5);
  noGrad(() => lora.parameters().forEach(([, t]) => t.backend.fill(t.buf, 0.02)));
  return { base, model };
}

describe('LoRA checkpoints name their base instead of copying it', () => {
  beforeAll(() => setBackend('js'));

  it('writes adapters, config and value head, no base weights, and loads back to the same model', async () => {
    const { base, model } = await loraOverSavedBase();
    const dir = tmp();
    const vh = ValueHead.init(config.hiddenSize, 1);
    await saveModel(dir, model, { valueHead: vh });
    expect(readdirSync(dir).sort()).toEqual([
      'adapter',
      'config.json',
      'generation_config.json',
      'value_head.safetensors',
    ]);
    expect(baseOf(dir)).toBe(resolve(base));
    // the base is 4 bytes a parameter on disk; the checkpoint holds the adapters and the head only
    expect(dirBytes(dir)).toBeLessThan(0.1 * 4 * model.numParameters);
    const back = await loadModel(dir);
    expect(back.model.baseDir).toBe(resolve(base));
    expect(logprobs(back.model)).toEqual(logprobs(model));
    expect(back.valueHead!.weight.toFloat32Array()).toEqual(vh.weight.toFloat32Array());
  });

  it('a checkpoint of a run started from an adapter-only checkpoint names the original base, not that checkpoint', async () => {
    const { base, model } = await loraOverSavedBase();
    const first = tmp();
    await saveModel(first, model);
    const { model: resumed } = await loadModel(first);
    const second = tmp();
    await saveModel(second, resumed);
    expect(baseOf(second)).toBe(resolve(base)); // so pruning `first` leaves `second` loadable
    expect(weightsDir(second)).toBe(resolve(base));
    expect(logprobs((await loadModel(second)).model)).toEqual(logprobs(model));
  });

  it('saving into the base directory, even by another name, keeps its weights', async () => {
    const { base, model } = await loraOverSavedBase();
    const alias = join(tmp(), 'alias');
    symlinkSync(base, alias);
    await saveModel(alias, model);
    expect(existsSync(join(base, 'model.safetensors'))).toBe(true);
    expect(logprobs((await loadModel(base)).model)).toEqual(logprobs(model));
  });

  it('a trainable base (no LoRA, or LoRA merged) is still written whole', async () => {
    const { model } = await loraOverSavedBase();
    model.lora!.merge(model);
    const dir = tmp();
    await saveModel(dir, model);
    expect(readdirSync(dir)).toContain('model.safetensors');
    expect(dirBytes(dir)).toBeGreaterThan(4 * model.numParameters);
  });

  it('a moved base is refused by name, with the way out', async () => {
    const { base, model } = await loraOverSavedBase();
    const dir = tmp();
    await saveModel(dir, model);
    renameSync(base, `${base}-moved`);
    const err = await loadModel(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as Error).message).toContain(resolve(base));
    expect((err as Error).message).toMatch(/put the base model back there, or set base_model_name_or_path/);
  });

  it.runIf(backendAvailable('native'))('over a bf16 base in native memory: same files, same model back', async () => {
    setBackend('native');
    try {
      const { base, model } = await loraOverSavedBase({ frozenBf16: true });
      const dir = tmp();
      await saveModel(dir, model);
      expect(readdirSync(dir)).not.toContain('model.safetensors');
      expect(dirBytes(dir)).toBeLessThan(0.1 * 4 * model.numParameters);
      const back = await loadModel(dir, { frozenBf16: true });
      expect(back.model.baseDir).toBe(resolve(base));
      expect(logprobs(back.model)).toEqual(logprobs(model));
    } finally {
      setBackend('js');
    }
  });
});
