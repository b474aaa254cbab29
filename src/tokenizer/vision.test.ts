// Qwen2.5-VL's vision tokens: the resize and patch grid worked by hand, the chat template widening each image's
// placeholder, and the token ids equal to transformers' Qwen2_5_VLProcessor (the torch 2 lane's .venv) on a range of
// image sizes (halves rounded to even, images under min_pixels and over max_pixels).
import { describe, expect, it } from 'vitest';
import { wheelPythonForTests } from '../engine/torch-testing.js';
import type { RgbImage } from '../util/index.js';
import { ChatTemplate } from './chat-template.js';
import { loadQwenTokenizer, qwenTokenizerDir } from './qwen.js';
import { RAGEN_QWEN25_TEMPLATE } from './templates.js';
import { expandImagePads, IMAGE_PLACEHOLDER, imageGrid, QWEN25_VL_PROCESSOR } from './vision.js';
import { spawnSync } from 'node:child_process';

const blank = (width: number, height: number): RgbImage => ({
  width,
  height,
  data: new Uint8Array(width * height * 3),
});

describe('imageGrid (smart_resize, patch 14, merge 2)', () => {
  it('keeps a size already in multiples of 28 and counts (h/28) x (w/28) tokens', () => {
    expect(imageGrid(56, 84)).toEqual({ resizedHeight: 56, resizedWidth: 84, gridH: 4, gridW: 6, tokens: 6 });
    expect(imageGrid(280, 560).tokens).toBe(10 * 20);
  });

  it('rounds each side to the nearest multiple of 28, halves to even as Python does', () => {
    expect(imageGrid(70, 84).resizedHeight).toBe(56); // 70 / 28 = 2.5 -> 2
    expect(imageGrid(98, 84).resizedHeight).toBe(112); // 98 / 28 = 3.5 -> 4
    expect(imageGrid(85, 84).resizedHeight).toBe(84); // 3.04 -> 3
  });

  it('scales a small image up to min_pixels (3136) and a huge one down under max_pixels', () => {
    // 28 x 28 = 784 < 3136: beta = sqrt(3136 / 784) = 2, each side ceil(28 * 2 / 28) * 28 = 56.
    expect(imageGrid(28, 28)).toMatchObject({ resizedHeight: 56, resizedWidth: 56, tokens: 4 });
    const big = imageGrid(5000, 4000);
    expect(big.resizedHeight * big.resizedWidth).toBeLessThanOrEqual(QWEN25_VL_PROCESSOR.maxPixels);
    expect(big.resizedHeight % 28).toBe(0);
  });

  it('refuses aspect ratios over 200 as the processor does, with the size in the message', () => {
    expect(() => imageGrid(10, 2100)).toThrow(/2100x10; Qwen2.5-VL's processor refuses aspect ratios over 200/);
  });
});

describe('image placeholders in the chat template', () => {
  it('a message with an image renders vision_start, one image_pad per token, vision_end where the image was', () => {
    const template = new ChatTemplate(RAGEN_QWEN25_TEMPLATE, {});
    const messages = [{ role: 'user', content: `Look:${IMAGE_PLACEHOLDER}Move?`, images: [blank(84, 56)] }];
    const text = template.render(messages, { vision: QWEN25_VL_PROCESSOR });
    expect(text).toContain(`Look:<|vision_start|>${'<|image_pad|>'.repeat(6)}<|vision_end|>Move?`);
    const ids = loadQwenTokenizer().encode(text);
    expect(ids.filter((id) => id === 151655)).toHaveLength(6); // <|image_pad|>
    expect(ids.filter((id) => id === 151652 || id === 151653)).toHaveLength(2); // <|vision_start|>, <|vision_end|>
  });

  it('refuses images without a vision processor (a text-only model) and placeholders without images', () => {
    const template = new ChatTemplate(RAGEN_QWEN25_TEMPLATE, {});
    expect(() => template.render([{ role: 'user', content: IMAGE_PLACEHOLDER, images: [blank(56, 56)] }])).toThrow(
      /carry 1 image\(s\) but this model is text-only/,
    );
    expect(() => expandImagePads(`a${IMAGE_PLACEHOLDER}`, [], QWEN25_VL_PROCESSOR)).toThrow(
      /1 image placeholders .* for 0 images/,
    );
  });
});

/** A processor with a small max_pixels (224 x 224), so that scaling down is checked on small arrays. */
const SMALL: typeof QWEN25_VL_PROCESSOR = { ...QWEN25_VL_PROCESSOR, maxPixels: 224 * 224 };

/**
 * Sizes (height, width, processor) the check covers: even and odd halves, tiny, wide, the visual envs', over max_pixels
 * (with SMALL: 1 = use it).
 */
const SIZES: [number, number, 0 | 1][] = [
  [56, 84, 0],
  [70, 97, 0],
  [98, 42, 0],
  [64, 64, 0],
  [96, 112, 0],
  [5, 5, 0],
  [30, 1000, 0],
  [333, 517, 0],
  [333, 517, 1],
  [1000, 700, 1],
  [90, 2000, 1],
];

const PROCESSOR_SCRIPT = `
import json, sys
import numpy as np
from transformers import PreTrainedTokenizerFast, Qwen2_5_VLProcessor
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
# The video processor needs torchvision, which the wheel folder lacks; images never reach it.
Qwen2_5_VLProcessor.check_argument_for_proper_class = lambda self, name, arg: type(arg)
tok = PreTrainedTokenizerFast(tokenizer_file=sys.argv[1] + "/tokenizer.json")
# Each processor as a model's preprocessor_config.json sets it: (min_pixels, max_pixels) pairs.
sizes = [{"shortest_edge": lo, "longest_edge": hi} for lo, hi in json.loads(sys.argv[3])]
procs = [Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessorPil(size=size), tokenizer=tok, video_processor=object()) for size in sizes]
out = []
for h, w, which in json.loads(sys.argv[2]):
    text = "Look:<|vision_start|><|image_pad|><|vision_end|>Move?"
    r = procs[which](images=[np.zeros((h, w, 3), dtype=np.uint8)], text=[text], return_tensors="np")
    out.append({"grid": r["image_grid_thw"][0].tolist(), "ids": r["input_ids"][0].tolist()})
ip = procs[0].image_processor
print(json.dumps({"patch": ip.patch_size, "merge": ip.merge_size, "sizes": out}))
`;

const python = wheelPythonForTests();

describe('against transformers', () => {
  it.skipIf(!python)(
    `the ids of a prompt with one image equal Qwen2_5_VLProcessor's for ${SIZES.length} sizes${python ? '' : ' (skipped: no .venv with torch >= 2 and transformers; make it as .ci/run does)'}`,
    () => {
      const r = spawnSync(
        python!,
        [
          '-c',
          PROCESSOR_SCRIPT,
          qwenTokenizerDir(),
          JSON.stringify(SIZES),
          JSON.stringify([QWEN25_VL_PROCESSOR, SMALL].map((q) => [q.minPixels, q.maxPixels])),
        ],
        {
          encoding: 'utf8',
          timeout: 180_000,
        },
      );
      if (r.status !== 0) throw new Error(`the processor script failed: ${r.stderr}`);
      const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
        patch: number;
        merge: number;
        sizes: { grid: number[]; ids: number[] }[];
      };
      const p = QWEN25_VL_PROCESSOR;
      expect([got.patch, got.merge]).toEqual([p.patchSize, p.mergeSize]);
      const tok = loadQwenTokenizer();
      SIZES.forEach(([h, w, which], i) => {
        const settings = which === 1 ? SMALL : p;
        const grid = imageGrid(h, w, settings);
        expect([1, grid.gridH, grid.gridW], `${w}x${h}`).toEqual(got.sizes[i]!.grid);
        const text = expandImagePads(`Look:${IMAGE_PLACEHOLDER}Move?`, [blank(w, h)], settings);
        expect(tok.encode(text), `${w}x${h}`).toEqual(got.sizes[i]!.ids);
      });
    },
    240_000,
  );
});
