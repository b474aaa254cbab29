// Qwen2.5-VL pixel values: the patch layout worked by hand on a tiny image, and the values equal to transformers'
// Qwen2VLImageProcessorPil (the .venv's transformers 5.17, Pillow's bicubic resize) on sizes already on the grid and
// sizes it resizes (up, down, one side only), with Qwen2.5-VL's settings and with Qwen3-VL's (patch 16, mean and std
// 0.5; its published processor is the torchvision one, whose resize rounds otherwise: the Pillow one is the reference).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { wheelPythonForTests } from '../engine/torch-testing.js';
import { Rng, type RgbImage } from '../util/index.js';
import { CLIP_MEAN, CLIP_STD, pixelValues, resizeBicubic } from './vision-pixels.js';
import { QWEN25_VL_PROCESSOR, type VisionProcessor } from './vision.js';

function noise(width: number, height: number, seed: number): RgbImage {
  const rng = new Rng(seed);
  return { width, height, data: Uint8Array.from({ length: width * height * 3 }, () => Math.floor(rng.random() * 256)) };
}

describe('pixelValues (patch 14, merge 2, temporal 2)', () => {
  it('lays a 56 x 56 image out as 16 rows of (C, T, 14, 14), 2x2 merge blocks first, the frame repeated', () => {
    // Each pixel's red byte names its patch (row-major 4 x 4 patches); green and blue are 0.
    const image: RgbImage = { width: 56, height: 56, data: new Uint8Array(56 * 56 * 3) };
    for (let y = 0; y < 56; y++)
      for (let x = 0; x < 56; x++) image.data[(y * 56 + x) * 3] = Math.floor(y / 14) * 4 + Math.floor(x / 14);
    const pv = pixelValues([image]);
    expect(pv.grids).toEqual([[1, 4, 4]]);
    expect([pv.numPatches, pv.patchDim]).toEqual([16, 1176]);
    const red = (row: number) => Math.round((pv.data[row * 1176]! * CLIP_STD[0] + CLIP_MEAN[0]) * 255) + 0; // no -0
    // Merge block (0,0) holds patches 0, 1, 4, 5; block (0,1) holds 2, 3, 6, 7; then the second block row.
    expect(Array.from({ length: 16 }, (_, r) => red(r))).toEqual([
      0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15,
    ]);
    // Within a row: 2 frames of red, then 2 of green (value 0 -> -mean/std), then blue.
    const row = pv.data.subarray(0, 1176);
    expect(row[196]).toBeCloseTo(row[0]!, 6); // the repeated frame
    expect(row[392]).toBeCloseTo(-CLIP_MEAN[1] / CLIP_STD[1], 5);
    expect(row[784]).toBeCloseTo(-CLIP_MEAN[2] / CLIP_STD[2], 5);
  });

  it('keeps an image already on the grid unchanged and refuses bytes that do not match the size', () => {
    const image = noise(28, 56, 1);
    expect(resizeBicubic(image, 28, 56).data).toEqual(image.data);
    expect(() => pixelValues([{ width: 10, height: 10, data: new Uint8Array(299) }])).toThrow(
      /10x10 needs 300 bytes, got 299/,
    );
  });
});

/** (width, height): on the grid, rounded, scaled up under min_pixels, one side resized only, downscaled. */
const SIZES: [number, number][] = [
  [56, 84],
  [112, 56],
  [64, 64],
  [97, 70],
  [30, 30],
  [56, 75],
  [333, 200],
  [1100, 1000],
];

const SCRIPT = `
import sys, json
import numpy as np
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
sizes = json.loads(sys.argv[2])
raw = open(sys.argv[1] + "/images.bin", "rb").read()
lo, hi, patch, mean, std = json.loads(sys.argv[3])
proc = Qwen2VLImageProcessorPil(size={"shortest_edge": lo, "longest_edge": hi}, patch_size=patch, image_mean=mean, image_std=std)
at, images = 0, []
for w, h in sizes:
    images.append(np.frombuffer(raw[at:at + w * h * 3], dtype=np.uint8).reshape(h, w, 3))
    at += w * h * 3
out = proc(images=images, return_tensors="np")
np.asarray(out["pixel_values"], dtype=np.float32).tofile(sys.argv[1] + "/pixels.bin")
print(json.dumps(out["image_grid_thw"].tolist()))
`;

const python = wheelPythonForTests();

/** Qwen3-VL's published processor settings (its preprocessor_config.json): patch 16, mean and std 0.5. */
const QWEN3_VL: VisionProcessor = {
  patchSize: 16,
  mergeSize: 2,
  minPixels: 65536,
  maxPixels: 16777216,
  imageMean: [0.5, 0.5, 0.5],
  imageStd: [0.5, 0.5, 0.5],
};

describe('against transformers', () => {
  for (const [name, p] of [
    ['Qwen2.5-VL', QWEN25_VL_PROCESSOR],
    ['Qwen3-VL', QWEN3_VL],
  ] as const)
    it.skipIf(!python)(
      `${name}'s pixel values equal Qwen2VLImageProcessorPil's on ${SIZES.length} sizes (resized ones too)${python ? '' : ' (skipped: no .venv with torch >= 2 and transformers; make it as .ci/run does)'}`,
      () => {
        const dir = mkdtempSync(join(tmpdir(), 'ragen-pixels-'));
        try {
          const images = SIZES.map(([w, h], i) => noise(w, h, 10 + i));
          const all = Buffer.concat(images.map((im) => Buffer.from(im.data)));
          writeFileSync(join(dir, 'images.bin'), all);
          const settings = [p.minPixels, p.maxPixels, p.patchSize, p.imageMean ?? CLIP_MEAN, p.imageStd ?? CLIP_STD];
          const r = spawnSync(python!, ['-c', SCRIPT, dir, JSON.stringify(SIZES), JSON.stringify(settings)], {
            encoding: 'utf8',
            timeout: 180_000,
          });
          if (r.status !== 0) throw new Error(`the processor script failed: ${r.stderr}`);
          const grids = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as number[][];
          const want = new Float32Array(readFileSync(join(dir, 'pixels.bin')).buffer.slice(0));
          const got = pixelValues(images, p);
          expect(got.grids).toEqual(grids);
          expect(got.data.length).toBe(want.length);
          let worst = 0;
          for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got.data[i]! - want[i]!));
          // One 8-bit level is 1 / 255 / std ~ 0.015: a resize slip shows far above this bound.
          expect(worst).toBeLessThan(1e-5);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      240_000,
    );
});
