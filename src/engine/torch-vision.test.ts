// The torch engine on a Qwen2.5-VL checkpoint (`ragen model init --shape qwen2.5-vl-tiny`): the worker loads it, text
// rows run through it, and `visionTrain` (`model.vision.train`) decides whether the vision tower's weights train. On a
// Qwen3-VL one (`qwen3-vl-tiny`) the engine sends images with Qwen3-VL's processor settings: a row scores as
// transformers' Qwen3VLForConditionalGeneration scores it from its own processor's pixels.
// The image seam itself (pixel values per row) is held in python/tests/test_vision_worker.py.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { imageGrid } from '../tokenizer/index.js';
import { Rng, type RgbImage } from '../util/index.js';
import { runWorkerPython, torchPythonForTests, wheelPythonForTests } from './torch-testing.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-vision-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!python)('the torch engine on qwen2.5-vl-tiny', () => {
  const dir = join(root, 'vl');
  beforeAll(async () => {
    await initModelDir(dir, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 });
  }, 120_000);

  for (const visionTrain of [false, true]) {
    it(`loads it, scores text rows, and ${visionTrain ? 'trains' : 'freezes'} the vision tower (visionTrain ${visionTrain})`, async () => {
      const engine = await TorchEngine.fromPretrained(dir, {
        python: python!,
        device: 'cpu',
        precision: 'float32',
        visionTrain,
        echoStderr: false,
      });
      try {
        const names = [...(await engine.tensors('policy')).keys()];
        expect(names).toContain('model.layers.0.self_attn.q_proj.weight');
        expect(names.includes('visual.merger.mlp.0.weight')).toBe(visionTrain);
        expect(names.includes('visual.blocks.1.attn.qkv.weight')).toBe(visionTrain);
        const out = await engine.forward(sequenceBatch([[151644, 872, 198, 9707, 151645]]), { role: 'policy' });
        const lp = [...out.logprobs!.slice(1, 5)];
        expect(lp.every((x) => Number.isFinite(x) && x < 0)).toBe(true);
      } finally {
        engine.dispose();
      }
    }, 120_000);
  }
});

/** transformers scores one row of a Qwen3-VL directory with pixel values from its own (Pillow) processor. */
const QWEN3_SCRIPT = `
import json, sys
import numpy as np, torch
from transformers import Qwen3VLForConditionalGeneration
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
d, work = sys.argv[1], sys.argv[2]
args = json.load(open(work + "/args.json"))
pre = json.load(open(d + "/preprocessor_config.json"))
proc = Qwen2VLImageProcessorPil(size=pre["size"], patch_size=pre["patch_size"], merge_size=pre["merge_size"],
                                image_mean=pre["image_mean"], image_std=pre["image_std"])
w, h = args["size"]
image = np.fromfile(work + "/image.bin", dtype=np.uint8).reshape(h, w, 3)
px = proc(images=[image], return_tensors="pt")
model = Qwen3VLForConditionalGeneration.from_pretrained(d, dtype=torch.float32).eval()
ids = torch.tensor([args["ids"]])
c = model.config
with torch.no_grad():
    r = model(input_ids=ids, pixel_values=px["pixel_values"], image_grid_thw=px["image_grid_thw"],
              mm_token_type_ids=(ids == c.image_token_id).int())
# the policy's distribution leaves out the vision tokens (docs/vision.md); a vision target scores 0
off = torch.tensor([c.vision_start_token_id, c.vision_end_token_id, 151654, c.image_token_id, c.video_token_id])
z = r.logits[0, :-1].double().index_fill(-1, off, float("-inf"))
lp = torch.log_softmax(z, -1).gather(-1, ids[0, 1:, None])[:, 0].masked_fill(torch.isin(ids[0, 1:], off), 0.0)
print(json.dumps({"logprobs": lp.tolist(), "grid": px["image_grid_thw"].tolist()}))
`;

const wheel = wheelPythonForTests();

describe.skipIf(!wheel)('the torch engine on qwen3-vl-tiny: images sent from TypeScript', () => {
  const dir = join(root, 'q3vl');
  beforeAll(async () => {
    await initModelDir(dir, 'qwen3-vl-tiny', { dtype: 'f32', seed: 2 });
  }, 120_000);

  it("reads its processor (patch 16, mean and std 0.5) and scores an image row as transformers does from its own processor's pixels", async () => {
    const engine = await TorchEngine.fromPretrained(dir, {
      python: wheel!,
      device: 'cpu',
      precision: 'float32',
      echoStderr: false,
    });
    const work = mkdtempSync(join(root, 'q3vl-row-'));
    try {
      expect(engine.vision).toMatchObject({ patchSize: 16, mergeSize: 2, imageMean: [0.5, 0.5, 0.5] });
      const rng = new Rng(4);
      const image: RgbImage = {
        width: 96,
        height: 64,
        data: Uint8Array.from({ length: 96 * 64 * 3 }, () => rng.int(256)),
      };
      // the processor resizes it up to its 65536-pixel floor: the pads follow that grid (patch 16, 2 x 2 merge)
      const grid = imageGrid(image.height, image.width, engine.vision!);
      const ids = [
        151644,
        872,
        198,
        151652,
        ...new Array<number>(grid.tokens).fill(151655),
        151653,
        9707,
        11,
        1879,
        151645,
      ];
      const out = await engine.forward({ ...sequenceBatch([ids]), images: [[image]] }, { role: 'policy' });
      writeFileSync(join(work, 'image.bin'), image.data);
      writeFileSync(join(work, 'args.json'), JSON.stringify({ ids, size: [image.width, image.height] }));
      const r = runWorkerPython(wheel!, ['-c', QWEN3_SCRIPT, dir, work], 180_000);
      if (r.status !== 0) throw new Error(`transformers failed: ${r.stderr}`);
      const theirs = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { logprobs: number[]; grid: number[][] };
      expect(theirs.grid).toEqual([[1, grid.gridH, grid.gridW]]);
      const ours = Array.from(out.logprobs.subarray(1, ids.length));
      ours.forEach((lp, t) => expect(Math.abs(lp - theirs.logprobs[t]!), `token ${t + 1}`).toBeLessThan(1e-4));
      // the pixels are read: other pixels, other log-probs after the image
      const blank = { ...image, data: new Uint8Array(image.data.length) };
      const other = await engine.forward({ ...sequenceBatch([ids]), images: [[blank]] }, { role: 'policy' });
      expect(Math.abs(other.logprobs.at(-1)! - out.logprobs.at(-1)!)).toBeGreaterThan(1e-4);
    } finally {
      engine.dispose();
    }
  }, 300_000);
});
