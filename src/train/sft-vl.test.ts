// SFT of a vision-language model from scratch (`ragen sft --init micro-vl`): the demos show the visual envs' images
// as vision tokens and carry them, the tower trains with the language model, and the result is a Qwen2.5-VL
// directory the engines load.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import { agentConfig, collate, type AgentConfig } from '../agent/index.js';
import { main } from '../cli/main.js';
import '../envs/index.js';
import { LocalEngine } from '../engine/index.js';
import { isVisionCheckpoint } from '../engine/local-vision.js';
import { findModelPath, Qwen25VL } from '../model/index.js';
import { imageGrid, IMAGE_PAD, loadTokenizer, tinyTokenizerDir, tinyVLTokenizerDir } from '../tokenizer/index.js';
import { buildDemos } from './sft-demos.js';
import { presetVLConfig, SFT_VL_PROCESSOR } from './sft.js';

const tokenizer = loadTokenizer(tinyVLTokenizerDir());
const agent = agentConfig({});

describe('ragen sft --init micro-vl', () => {
  test('demos with a vision processor carry each turn image at its vision tokens, none trained', async () => {
    const opts = { envs: ['VisualFrozenLake'], envConfig: { VisualFrozenLake: { observation: 'image' } }, episodes: 4 };
    const demos = await buildDemos(tokenizer, agent, { ...opts, vision: SFT_VL_PROCESSOR });
    const pad = tokenizer.tokenToId(IMAGE_PAD)!;
    expect(demos.samples.length).toBeGreaterThan(0);
    for (const s of demos.samples) {
      expect(s.images?.length).toBeGreaterThan(0);
      const want = s.images!.reduce((a, im) => a + imageGrid(im.height, im.width, SFT_VL_PROCESSOR).tokens, 0);
      expect(s.ids.filter((id) => id === pad).length).toBe(want);
      s.ids.forEach((id, i) => id === pad && expect(s.lossMask[i]).toBe(0));
    }
    // without the processor the same demos are text: no images, no pads
    const text = await buildDemos(tokenizer, agent, opts);
    expect(text.samples.every((s) => s.images === undefined && !s.ids.includes(pad))).toBe(true);
  });

  test('needs a tokenizer with the vision tokens', () => {
    expect(() => presetVLConfig('micro-vl', loadTokenizer(tinyTokenizerDir()))).toThrow(/tokenizer-tiny-vl/);
    expect(() => presetVLConfig('huge-vl', tokenizer)).toThrow(/micro-vl, tiny-vl/);
    const c = presetVLConfig('tiny-vl', tokenizer);
    expect(2 * c.mropeSection.reduce((a, b) => a + b, 0)).toBe(c.text.headDim);
    // every vision token is the tokenizer's (so the model never samples any of them)
    const ids = [c.visionStartTokenId, c.visionEndTokenId, c.visionPadTokenId, c.imageTokenId, c.videoTokenId];
    const names = ['<|vision_start|>', '<|vision_end|>', '<|vision_pad|>', IMAGE_PAD, '<|video_pad|>'];
    expect(ids).toEqual(names.map((n) => tokenizer.tokenToId(n)));
    expect(Math.min(...ids)).toBe(1024);
  });

  test('trains the tower and the language model on image-only demos and saves a Qwen2.5-VL directory', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'ragen-sft-vl-')), 'model');
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const code = await main([
      'sft',
      ...['--env', 'VisualFrozenLake', '--env-config', 'VisualFrozenLake.observation=image'],
      ...['--episodes', '16', '--steps', '30', '--batch', '4', '--lr', '5e-3', '--init', 'micro-vl'],
      ...['--val-every', '0', '--val-groups', '1', '--progress', 'none', '--out', out],
    ]);
    vi.restoreAllMocks();
    expect(code).toBe(0);
    expect(await isVisionCheckpoint(out)).toBe(true);
    const log = readFileSync(join(out, 'sft_log.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { loss?: number });
    const losses = log.flatMap((r) => (r.loss === undefined ? [] : [r.loss]));
    expect(losses.slice(-5).reduce((a, b) => a + b) / 5).toBeLessThan(losses.slice(0, 5).reduce((a, b) => a + b) / 5);
    // the tower moved from its initialization (same seed, same config)
    const trained = await Qwen25VL.load(out);
    const init = Qwen25VL.init(trained.config, 0);
    const name = [...trained.visual.weights.keys()].find((k) => k.includes('patch_embed'))!;
    const a = trained.visual.weights.get(name)!.toFloat32Array();
    const b = init.visual.weights.get(name)!.toFloat32Array();
    expect(a.some((v, i) => Math.abs(v - b[i]!) > 1e-4)).toBe(true);
    expect(JSON.parse(readFileSync(join(out, 'preprocessor_config.json'), 'utf8')).max_pixels).toBe(112 * 112);
    // the tokenizer's end and padding ids, not transformers' defaults (Qwen's, outside this 1029-id vocabulary)
    for (const file of ['config.json', 'generation_config.json']) {
      const saved = JSON.parse(readFileSync(join(out, file), 'utf8')) as Record<string, unknown>;
      expect([file, saved.eos_token_id, saved.pad_token_id]).toEqual([
        file,
        tokenizer.eosTokenId,
        tokenizer.padTokenId,
      ]);
    }
  });

  test('the shipped ragen-tiny-vl reads the pixels: unseen demos are likelier under their own images than under others', async () => {
    const dir = findModelPath('ragen-tiny-vl')!;
    const args = JSON.parse(readFileSync(join(dir, 'sft_args.json'), 'utf8')) as {
      agent: AgentConfig;
      envConfig: Record<string, Record<string, unknown>>;
    };
    const tok = loadTokenizer(dir);
    const engine = await LocalEngine.fromPretrained(dir, { decode: (ids) => tok.decode(ids) });
    for (const env of ['VisualSimpleSokoban', 'VisualFrozenLake']) {
      expect(args.envConfig[env]?.observation).toBe('image'); // only the pixels carry the state
      // seeds past the SFT's (10000 up): states the model never saw
      const demos = await buildDemos(tok, agentConfig(args.agent), {
        envs: [env],
        envConfig: args.envConfig,
        episodes: 6,
        trainSeed: 50000,
        vision: engine.vision!,
      });
      const own = collate(demos.samples.slice(0, 12), tok.padTokenId);
      // each row's image moved to the next row: the same prompt text around another state's picture
      const swapped = { ...own, images: own.images!.map((_, i, all) => all[(i + 1) % all.length]!) };
      const score = async (batch: typeof own) => {
        const lp = (await engine.forward(batch, { role: 'policy' })).logprobs;
        return Array.from({ length: batch.B }, (_, b) => {
          let sum = 0;
          for (let t = 1; t < batch.T; t++) if (batch.lossMask[b * batch.T + t]) sum += lp[b * batch.T + t]!;
          return sum;
        });
      };
      const [a, b] = [await score(own), await score(swapped)];
      const better = a.filter((x, i) => x > b[i]!).length;
      expect(better, env).toBeGreaterThanOrEqual(Math.ceil(0.75 * a.length));
      expect(
        a.reduce((x, y) => x + y),
        env,
      ).toBeGreaterThan(b.reduce((x, y) => x + y) + a.length);
    }
    engine.dispose();
  });
});
