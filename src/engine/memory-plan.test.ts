import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFromHF, modelConfig, modelShape, saveModel, Transformer } from '../model/index.js';
import { sequenceBatch } from './batch.js';
import { backendAvailable, setBackend } from '../tensor/index.js';
import { ConfigError } from '../util/index.js';
import { LocalEngine } from './local.js';
import { checkArenaFits, memoryPlan } from './memory-plan.js';

/** A checkpoint directory holding only config.json of a named shape (no weights: loading any would fail). */
function configOnly(shape: string): string {
  const dir = mkdtempSync(join(tmpdir(), `ragen-plan-${shape}-`));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(modelShape(shape).config));
  return dir;
}

const qwen05 = configFromHF(modelShape('qwen2.5-0.5b').config, 'qwen2.5-0.5b');

describe('the local engine memory plan', () => {
  it('counts Qwen2.5-0.5B as the 494,032,768 parameters of its Hugging Face checkpoint', () => {
    expect(memoryPlan(qwen05, { lora: null, critic: null, reference: null }).parameters).toBe(494_032_768);
  });

  it('adds gradient and both AdamW moments for a full fine-tune but only for the adapters with LoRA', () => {
    const full = memoryPlan(qwen05, { lora: null, critic: null, reference: null });
    expect(full.trainingStateBytes).toBe(3 * full.weightBytes);
    const lora = memoryPlan(qwen05, { lora: { r: 8, alpha: 16 }, critic: 'shared', reference: 'base' });
    // r (in + out) per projection: q 896+896, k 896+128, v 896+128, o 896+896, gate/up 896+4864, down 4864+896
    const adapters = 24 * 8 * (2 * 1792 + 2 * 1024 + 3 * 5760);
    const head = 896 + 1;
    expect(lora.weightBytes).toBe(4 * (494_032_768 + adapters + head));
    expect(lora.trainingStateBytes).toBe(12 * (adapters + head));
  });
});

describe.runIf(backendAvailable('wasm'))('a model past the 4 GiB tensor arena', () => {
  it('is refused at load, before any weight is read, with its size and the way out', async () => {
    setBackend('wasm');
    const dir = configOnly('qwen2.5-0.5b');
    const load = LocalEngine.fromPretrained(dir, { backend: 'wasm', critic: 'separate', reference: true });
    await expect(load).rejects.toThrow(ConfigError);
    const message = String(await load.catch((e: Error) => e.message));
    expect(message).toContain('494.0M parameters');
    expect(message).toContain('model.engine=torch');
    // the LoRA layout of the same model fits, and the message says so
    expect(message).toMatch(/model\.lora\.rank=8 model\.critic\.mode=shared needs 1\.9\d GiB/);
    expect(message.split('\n')).toHaveLength(1);
  });

  it('does not offer LoRA where even the LoRA layout is past the limit', async () => {
    const dir = configOnly('qwen2.5-1.5b');
    const message = String(await LocalEngine.fromPretrained(dir, { backend: 'wasm' }).catch((e: Error) => e.message));
    expect(message).toContain('model.engine=torch');
    expect(message).not.toContain('lora');
  });

  it('names the native backend as the way out, which loads the same layout (its arena is not WebAssembly memory)', async () => {
    const dir = configOnly('qwen2.5-1.5b');
    const lora = { r: 8, alpha: 16 };
    const message = String(
      await LocalEngine.fromPretrained(dir, { backend: 'wasm', lora }).catch((e: Error) => e.message),
    );
    expect(message).toContain('model.engine=torch');
    expect(message).toContain('model.backend=native');
    if (!backendAvailable('native')) return;
    // past the wasm arena's 4 GiB, the plan passes: loading goes on to the (missing) weights
    const native = String(
      await LocalEngine.fromPretrained(dir, { backend: 'native', lora }).catch((e: Error) => e.message),
    );
    expect(native).not.toContain('tensor arena');
    expect(native).not.toContain('4 GiB');
  });

  it('counts a LoRA adapter saved in the checkpoint (its base then trains no moments)', async () => {
    // Qwen2.5-0.5B full fine-tune is 7.4 GiB; with a saved adapter it is the 1.8 GiB base, which fits, so
    // loading goes on and fails only at the missing weights.
    const dir = configOnly('qwen2.5-0.5b');
    mkdirSync(join(dir, 'adapter'));
    writeFileSync(join(dir, 'adapter', 'adapter_config.json'), JSON.stringify({ r: 8, lora_alpha: 16 }));
    const message = String(await LocalEngine.fromPretrained(dir, { backend: 'wasm' }).catch((e: Error) => e.message));
    expect(message).not.toContain('tensor arena');
  });
});

describe('the native backend: no 4 GiB limit, a warning past the RAM', () => {
  const full = { lora: null, critic: 'separate', reference: 'copy' } as const; // Qwen2.5-1.5B: ~35 GiB
  const qwen15 = configFromHF(modelShape('qwen2.5-1.5b').config, 'qwen2.5-1.5b');

  it('never refuses, even a layout far past 4 GiB', () => {
    const lines: string[] = [];
    expect(checkArenaFits(qwen15, full, 'native', 'dir', 2 ** 50, (l) => lines.push(l))).toBeNull();
    expect(lines).toEqual([]);
  });

  it("warns, naming the sizes, when the plan is past the machine's RAM", () => {
    const lines: string[] = [];
    const need = memoryPlan(qwen15, full).totalBytes;
    const line = checkArenaFits(qwen15, full, 'native', 'dir', need - 1, (l) => lines.push(l));
    expect(lines).toEqual([line]);
    expect(line).toMatch(/needs \d+\.\d\d GiB before any batch .* more than this machine's \d+\.\d\d GiB of RAM/);
    expect(checkArenaFits(qwen15, full, 'native', 'dir', need, (l) => lines.push(l))).toBeNull();
  });

  it('still refuses the same layout on the wasm backend', () => {
    expect(() => checkArenaFits(qwen15, full, 'wasm', 'dir', 2 ** 50, () => {})).toThrow(ConfigError);
  });
});

describe.runIf(backendAvailable('native'))('model.frozenDtype=bf16 on the local engine', () => {
  it('loads a LoRA base as bf16 whose reference (adapters off) scores as the policy at init', async () => {
    setBackend('native');
    const dir = mkdtempSync(join(tmpdir(), 'ragen-bf16-'));
    const config = modelConfig({ vocabSize: 40, hiddenSize: 32, intermediateSize: 48, numLayers: 2, numHeads: 4 });
    const src = Transformer.init(config, 3);
    await saveModel(dir, src);
    src.dispose();
    const lora = { r: 4, alpha: 8 };
    const engine = await LocalEngine.fromPretrained(dir, {
      backend: 'native',
      lora,
      critic: 'shared',
      reference: true,
      frozenDtype: 'bf16',
    });
    expect(engine.policy.hasBf16Weights).toBe(true);
    const batch = sequenceBatch([
      [1, 2, 3, 4, 5],
      [6, 7, 8],
    ]);
    const policy = await engine.forward(batch, { role: 'policy' });
    const reference = await engine.forward(batch, { role: 'reference' });
    // LoRA's B starts at zero: the adapted policy and the base agree exactly, and the log-probs are real
    expect(policy.logprobs).toEqual(reference.logprobs);
    expect(policy.logprobs.some((v) => v < -1)).toBe(true);
  });

  it('refuses bf16 when nothing is frozen (a full fine-tune without a reference)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-bf16-'));
    const src = Transformer.init(
      modelConfig({ vocabSize: 40, hiddenSize: 32, intermediateSize: 48, numLayers: 1, numHeads: 4 }),
      3,
    );
    await saveModel(dir, src);
    src.dispose();
    await expect(LocalEngine.fromPretrained(dir, { backend: 'native', frozenDtype: 'bf16' })).rejects.toThrow(
      /model\.frozenDtype=bf16 needs frozen weights/,
    );
  });
});
