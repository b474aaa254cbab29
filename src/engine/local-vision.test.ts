// The local engine with a Qwen2.5-VL checkpoint: generate calls whose prompts carry images sample as generateVL does,
// text prompts take the text paths with the same result, rows with image tokens but no images and images for a
// text-only model are refused with a sentence (training on rows with images: local-vision-train.test.ts).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VisualFrozenLakeEnv } from '../envs/frozen-lake/visual.js';
import { generateVL, modelConfig, Qwen25VL, writeSafetensors, type WeightMap } from '../model/index.js';
import { IMAGE, jitteredVL, TINY_VL_JSON } from '../model/qwen2-vl-testing.js';
import { setBackend } from '../tensor/index.js';
import { pixelValues } from '../tokenizer/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';

const dir = mkdtempSync(join(tmpdir(), 'ragen-local-vl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A 56 x 56 lake: a 4 x 4 patch grid, 4 <|image_pad|> tokens. */
const lake = (() => {
  const env = new VisualFrozenLakeEnv({ size: 4, tileSize: 14 });
  return env.reset({ seed: 2 }).images![0]!;
})();
const withImage = [3, 7, 20, IMAGE, IMAGE, IMAGE, IMAGE, 23, 5, 9];
const text = [3, 7, 5, 9, 11];

async function checkpoint(): Promise<void> {
  setBackend('js');
  const m = jitteredVL(8);
  const weights: WeightMap = new Map();
  for (const [name, t] of [...m.lm.weights, ...m.visual.weights])
    weights.set(name, { shape: [...t.shape], data: t.toFloat32Array() });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(TINY_VL_JSON));
  await writeSafetensors(join(dir, 'model.safetensors'), weights);
  m.dispose();
}

describe('LocalEngine with a Qwen2.5-VL checkpoint', () => {
  it('samples a prompt with its image as generateVL does, and a text prompt as the text path does', async () => {
    await checkpoint();
    const engine = await LocalEngine.fromPretrained(dir, { backend: 'js', lora: { r: 2, alpha: 4 } });
    const params = { maxNewTokens: 5, temperature: 0, seed: 1 };
    const gens = await engine.generate([withImage, text], { ...params, images: [[lake], undefined] });
    const vl = await Qwen25VL.load(dir);
    const pv = pixelValues([lake]);
    const [direct] = generateVL(vl, [withImage], [{ pixels: pv.data, grids: pv.grids }], params);
    expect(gens[0]!.tokens).toEqual(direct!.tokens);
    gens[0]!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(direct!.logprobs[i]!, 5));
    // text through the VLM's 3-D positions = text through the plain decoder (every axis at the same position)
    const [plain] = await engine.generate([text], params);
    expect(gens[1]!.tokens).toEqual(plain!.tokens);
    plain!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(gens[1]!.logprobs[i]!, 4));
    // the image matters: a blank one changes the completion's log-probs
    const blank = { ...lake, data: new Uint8Array(lake.data.length) };
    const [other] = await engine.generate([withImage], { ...params, images: [[blank]] });
    expect(other!.logprobs).not.toEqual(gens[0]!.logprobs);
    vl.dispose();
    engine.dispose();
  });

  it('refuses a batch row with image tokens and no images, naming the row', async () => {
    const engine = await LocalEngine.fromPretrained(dir, { backend: 'js', lora: { r: 2, alpha: 4 } });
    const ok = await engine.forward(sequenceBatch([text]), { role: 'policy' });
    expect(ok.logprobs.length).toBe(text.length);
    await expect(engine.forward(sequenceBatch([text, withImage]), { role: 'policy' })).rejects.toThrow(
      /Row 1 of the batch holds 4 <\|image_pad\|> tokens but no images/,
    );
    await expect(engine.backward(sequenceBatch([withImage]), { role: 'policy' }, () => ({}))).rejects.toThrow(
      /SequenceBatch.images/,
    );
    engine.dispose();
  });

  it('refuses a Qwen3-VL checkpoint with the engine that runs it', async () => {
    const q3 = join(dir, 'qwen3-vl');
    mkdirSync(q3);
    writeFileSync(join(q3, 'config.json'), JSON.stringify({ model_type: 'qwen3_vl', text_config: {} }));
    await expect(LocalEngine.fromPretrained(q3, { backend: 'js' })).rejects.toThrow(
      /is a Qwen3-VL checkpoint, which the local engine does not run yet.*model\.engine: torch/,
    );
  });

  it('a text-only model refuses prompts with images, naming the prompt', async () => {
    const engine = LocalEngine.create(
      modelConfig({ vocabSize: 64, hiddenSize: 16, intermediateSize: 24, numLayers: 1, numHeads: 2 }),
      { backend: 'js' },
    );
    await expect(
      engine.generate([text, text], { maxNewTokens: 2, temperature: 0, seed: 1, images: [undefined, [lake]] }),
    ).rejects.toThrow(/is text-only and cannot read the 1 image\(s\) of prompt 1/);
    await expect(
      engine.forward({ ...sequenceBatch([text, text]), images: [undefined, [lake]] }, { role: 'policy' }),
    ).rejects.toThrow(/Row 1 of the batch carries 1 image\(s\) but the local engine's model is text-only/);
    engine.dispose();
  });
});
