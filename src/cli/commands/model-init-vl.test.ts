// `ragen model init` for Qwen2.5-VL shapes: the published config.json values (written out below from Qwen's published
// files, not read from our table), the model cards' parameter counts, Qwen's preprocessor_config.json, and a tiny
// directory that the torch worker loads and runs on an image, and that transformers loads without a missing weight.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runWorkerPython, torchPythonForTests, wheelPythonForTests } from '../../engine/torch-testing.js';
import { readSafetensors } from '../../model/index.js';
import { appendOnlyViolation, loadTokenizer } from '../../tokenizer/index.js';
import { runCli } from '../testing.js';
import { initModelDir } from './model-init.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-model-init-vl-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const json = (dir: string, file: string) =>
  JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;

// Qwen/Qwen2.5-VL-3B-Instruct's and -7B-Instruct's published config.json.
const VISION = {
  depth: 32,
  hidden_act: 'silu',
  hidden_size: 1280,
  intermediate_size: 3420,
  num_heads: 16,
  patch_size: 14,
  spatial_merge_size: 2,
  window_size: 112,
  fullatt_block_indexes: [7, 15, 23, 31],
  tokens_per_second: 2,
  temporal_patch_size: 2,
};
const QWEN25_VL = {
  architectures: ['Qwen2_5_VLForConditionalGeneration'],
  model_type: 'qwen2_5_vl',
  bos_token_id: 151643,
  eos_token_id: 151645,
  vision_start_token_id: 151652,
  vision_end_token_id: 151653,
  image_token_id: 151655,
  video_token_id: 151656,
  hidden_act: 'silu',
  max_position_embeddings: 128000,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  rope_scaling: { type: 'mrope', mrope_section: [16, 24, 24] },
};
const PUBLISHED: Record<string, Record<string, unknown>> = {
  'qwen2.5-vl-3b': {
    ...QWEN25_VL,
    vocab_size: 151936,
    hidden_size: 2048,
    intermediate_size: 11008,
    num_hidden_layers: 36,
    num_attention_heads: 16,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
    vision_config: { ...VISION, out_hidden_size: 2048 },
  },
  'qwen2.5-vl-7b': {
    ...QWEN25_VL,
    vocab_size: 152064,
    hidden_size: 3584,
    intermediate_size: 18944,
    num_hidden_layers: 28,
    num_attention_heads: 28,
    num_key_value_heads: 4,
    tie_word_embeddings: false,
    vision_config: { ...VISION, out_hidden_size: 3584 },
  },
};
// The model cards' sizes, in billions: 3.75B and 8.29B.
const BILLIONS: Record<string, number> = { 'qwen2.5-vl-3b': 3.75, 'qwen2.5-vl-7b': 8.29 };

describe('ragen model init --shape qwen2.5-vl-*', () => {
  for (const [shape, published] of Object.entries(PUBLISHED)) {
    it(`writes ${shape}'s published config.json and Qwen's preprocessor_config.json`, async () => {
      const dir = join(root, `cfg-${shape}`);
      const r = await initModelDir(dir, shape, { weights: false });
      const cfg = json(dir, 'config.json');
      for (const [key, value] of Object.entries(published)) {
        if (key === 'vision_config')
          for (const [k, x] of Object.entries(value as Record<string, unknown>))
            expect((cfg[key] as Record<string, unknown>)[k], `vision_config.${k}`).toEqual(x);
        else expect(cfg[key], key).toEqual(value);
      }
      expect(Math.abs(r.parameters / 1e9 - BILLIONS[shape]!)).toBeLessThanOrEqual(0.005);
      expect(r.files).toContain('preprocessor_config.json');
      const pre = json(dir, 'preprocessor_config.json');
      expect(pre).toMatchObject({ min_pixels: 3136, max_pixels: 12845056, patch_size: 14, merge_size: 2 });
      expect(pre['image_mean']).toEqual([0.48145466, 0.4578275, 0.40821073]);
      expect(pre['image_std']).toEqual([0.26862954, 0.26130258, 0.27577711]);
    });
  }

  const tiny = join(root, 'qwen2.5-vl-tiny');
  it("writes qwen2.5-vl-tiny through the CLI with Qwen2.5's tokenizer, the vision tokens and an append-only template", async () => {
    const { code, out, err } = await runCli(
      'model',
      'init',
      '--shape',
      'qwen2.5-vl-tiny',
      '--out',
      tiny,
      '--seed',
      '2',
      '--dtype',
      'f32',
    );
    expect(code, err).toBe(0);
    // 19.5M of the language model (as qwen2.5-tiny) + the vision tower's 84K.
    expect(out).toContain('qwen2.5-vl-tiny, 19.6M parameters (f32');
    const w = await readSafetensors(join(tiny, 'model.safetensors'));
    expect(w.get('visual.patch_embed.proj.weight')!.shape).toEqual([32, 3, 2, 14, 14]);
    expect(w.get('visual.merger.mlp.0.weight')!.shape).toEqual([128, 128]);
    expect(w.get('visual.merger.ln_q.weight')!.data.every((x) => x === 1)).toBe(true);
    expect(w.get('visual.blocks.1.norm2.weight')!.data.every((x) => x === 1)).toBe(true);
    expect(w.get('visual.blocks.0.attn.qkv.bias')!.data.every((x) => x === 0)).toBe(true);
    const tok = loadTokenizer(tiny);
    expect(tok.encode('<|vision_start|><|image_pad|><|vision_end|>')).toEqual([151652, 151655, 151653]);
    expect(appendOnlyViolation(tok)).toBeNull();
  }, 300_000);

  const torchPython = torchPythonForTests();
  it.skipIf(!torchPython)(
    `the torch worker loads qwen2.5-vl-tiny with every tensor it names and reads an image${torchPython ? '' : ' (skipped: no Python with torch)'}`,
    async () => {
      const script = `
import sys, torch
from ragen_torch.model import load_decoder
from ragen_torch.safetensors_io import load_weights
d = sys.argv[1]
m = load_decoder(d, torch.device("cpu")).eval()
file = {k: list(v.shape) for k, v in load_weights(d).items()}
ours = {k: list(v.shape) for k, v in m.state_dict().items()}
assert file == ours, (sorted(set(file) ^ set(ours)))
ids = torch.tensor([[151644, 872, 198, 151652] + [151655] * 4 + [151653, 151645]])
g = torch.tensor([[1, 4, 4]])
with torch.no_grad():
    a = m(ids, with_logits=True, images=[(torch.randn(16, 1176), g)])[1]
    b = m(ids, with_logits=True, images=[(torch.randn(16, 1176), g)])[1]
assert torch.isfinite(a).all() and (a[0, 8:] - b[0, 8:]).abs().max() > 0
print("ok", len(ours))
`;
      const r = runWorkerPython(torchPython!, ['-c', script, tiny], 120_000);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^ok \d+/m);
    },
    120_000,
  );

  const wheel = wheelPythonForTests();
  it.skipIf(!wheel)(
    `transformers loads qwen2.5-vl-tiny with no missing weight and its processor settings${wheel ? '' : ' (skipped: no .venv with transformers)'}`,
    () => {
      const script = `
import sys, json
from transformers import Qwen2_5_VLForConditionalGeneration
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
m, info = Qwen2_5_VLForConditionalGeneration.from_pretrained(sys.argv[1], output_loading_info=True)
p = Qwen2VLImageProcessorPil.from_pretrained(sys.argv[1])
print(json.dumps({"missing": sorted(info["missing_keys"]), "unexpected": sorted(info["unexpected_keys"]), "size": dict(p.size),
                  "mean": list(p.image_mean), "merge": p.merge_size}))
`;
      const r = runWorkerPython(wheel!, ['-c', script, tiny], 180_000);
      expect(r.status, r.stderr).toBe(0);
      const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(got['missing']).toEqual([]);
      expect(got['unexpected']).toEqual([]);
      expect(got['size']).toEqual({ shortest_edge: 3136, longest_edge: 12845056 });
      expect(got['merge']).toBe(2);
    },
    180_000,
  );
});

// Qwen/Qwen3-VL-4B-Instruct's published config.json (text_config nested).
const QWEN3_VL_4B = {
  top: { model_type: 'qwen3_vl', architectures: ['Qwen3VLForConditionalGeneration'], tie_word_embeddings: true },
  text_config: {
    head_dim: 128,
    hidden_size: 2560,
    intermediate_size: 9728,
    max_position_embeddings: 262144,
    num_attention_heads: 32,
    num_hidden_layers: 36,
    num_key_value_heads: 8,
    rope_theta: 5000000,
    rope_scaling: { mrope_interleaved: true, mrope_section: [24, 20, 20], rope_type: 'default' },
    vocab_size: 151936,
  },
  vision_config: {
    deepstack_visual_indexes: [5, 11, 17],
    depth: 24,
    hidden_act: 'gelu_pytorch_tanh',
    hidden_size: 1024,
    intermediate_size: 4096,
    num_heads: 16,
    num_position_embeddings: 2304,
    out_hidden_size: 2560,
    patch_size: 16,
  },
};

describe('ragen model init --shape qwen3-vl-*', () => {
  it("writes qwen3-vl-4b's published config.json (4.44B parameters) and Qwen3-VL's preprocessor_config.json", async () => {
    const dir = join(root, 'cfg-qwen3-vl-4b');
    const r = await initModelDir(dir, 'qwen3-vl-4b', { weights: false });
    const cfg = json(dir, 'config.json');
    for (const [k, x] of Object.entries(QWEN3_VL_4B.top)) expect(cfg[k], k).toEqual(x);
    for (const part of ['text_config', 'vision_config'] as const)
      for (const [k, x] of Object.entries(QWEN3_VL_4B[part]))
        expect((cfg[part] as Record<string, unknown>)[k], `${part}.${k}`).toEqual(x);
    expect(Math.abs(r.parameters / 1e9 - 4.44)).toBeLessThanOrEqual(0.005);
    expect(json(dir, 'preprocessor_config.json')).toMatchObject({
      size: { longest_edge: 16777216, shortest_edge: 65536 },
      patch_size: 16,
      image_mean: [0.5, 0.5, 0.5],
    });
  });

  const tiny = join(root, 'qwen3-vl-tiny');
  it("writes qwen3-vl-tiny with Qwen3's tokenizer and names as Qwen3-VL publishes them", async () => {
    const r = await initModelDir(tiny, 'qwen3-vl-tiny', { dtype: 'f32', seed: 4 });
    expect(r.files).toContain('preprocessor_config.json');
    const w = await readSafetensors(join(tiny, 'model.safetensors'));
    expect(w.get('model.language_model.layers.1.self_attn.q_norm.weight')!.shape).toEqual([32]);
    expect(w.get('model.visual.deepstack_merger_list.0.norm.weight')!.data.every((x) => x === 1)).toBe(true);
    expect(w.get('model.visual.blocks.0.norm1.bias')!.data.every((x) => x === 0)).toBe(true);
    expect(w.has('lm_head.weight')).toBe(false); // tied
    const tok = loadTokenizer(tiny);
    expect(tok.encode('<|vision_start|><|image_pad|><|vision_end|>')).toEqual([151652, 151655, 151653]);
    expect(appendOnlyViolation(tok)).toBeNull();
  }, 300_000);

  const wheel = wheelPythonForTests();
  it.skipIf(!wheel)(
    `transformers and the torch worker load qwen3-vl-tiny alike: no missing weight, equal logits on an image${wheel ? '' : ' (skipped: no .venv with transformers)'}`,
    () => {
      const script = `
import sys, torch
from transformers import Qwen3VLForConditionalGeneration
from ragen_torch.model import load_decoder
d = sys.argv[1]
hf, info = Qwen3VLForConditionalGeneration.from_pretrained(d, output_loading_info=True, dtype=torch.float32, attn_implementation="eager")
assert not info["missing_keys"] and not info["unexpected_keys"], info
ours = load_decoder(d, torch.device("cpu")).eval()
ids = torch.tensor([[151644, 872, 198, 151652] + [151655] * 4 + [151653, 151645]])
pix, g = torch.randn(16, 3 * 2 * 16 * 16), torch.tensor([[1, 4, 4]])
with torch.no_grad():
    a = ours(ids, with_logits=True, images=[(pix, g)])[1][0]
    b = hf.eval()(input_ids=ids, pixel_values=pix, image_grid_thw=g, mm_token_type_ids=(ids == 151655).int()).logits[0]
torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * b.abs().max().item())
print("ok")
`;
      const r = runWorkerPython(wheel!, ['-c', script, tiny], 180_000);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^ok$/m);
    },
    180_000,
  );
});
