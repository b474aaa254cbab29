// A vision-language model never samples its vision tokens, in either engine. On `ragen model init --shape
// qwen2.5-vl-tiny` biased so that the five vision tokens take nearly all the mass (unsuppressed, its samples are mostly
// vision tokens: checked), every sampling path returns none, the sampled tokens' log-probs equal the teacher-forced
// pass's (both of the distribution without them), a training step on the rollout runs, and a row that holds a vision
// token outside an image run is refused naming the row, the token and its position.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import { VisualFrozenLakeEnv } from '../envs/frozen-lake/visual.js';
import { generate } from '../model/index.js';
import { testBackend } from '../tensor/testing.js';
import type { RgbImage } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import type { Generation, SamplingParams, TrainableEngine } from './types.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-vl-suppress-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Qwen2.5-VL's tokenizer: <|vision_start|> .. <|video_pad|> (the tiny shape's config.json names the same ids).
const VISION = new Set([151652, 151653, 151654, 151655, 151656]);
const [START, END, IMAGE_PAD] = [151652, 151653, 151655];
const head = [151644, 872, 198]; // <|im_start|>user\n
const tail = [151645, 198, 151644, 77091, 198]; // <|im_end|>\n<|im_start|>assistant\n
const imagePrompt = [...head, START, ...new Array<number>(4).fill(IMAGE_PAD), END, 9707, ...tail];
const textPrompts = [
  [...head, 9707, ...tail],
  [...head, 3838, 374, 220, 17, 30, ...tail],
];
/** 56 x 56: 4 <|image_pad|> tokens. */
const image: RgbImage = new VisualFrozenLakeEnv({ size: 4, tileSize: 14 }).reset({ seed: 2 }).images![0]!;

/**
 * The tiny VLM with every token embedding's first entry raised by 1 (so the final hidden state's first entry is large
 * and positive) and the vision tokens' head rows reading only that entry, times 3: they take nearly all the mass.
 */
async function biasedModel(): Promise<string> {
  const dir = join(root, 'vl');
  await initModelDir(dir, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 });
  const engine = await LocalEngine.fromPretrained(dir, { backend: 'js' });
  const C = engine.policy.config.hiddenSize;
  const edit = (name: string, f: (w: Float32Array) => void) => {
    const t = engine.policy.weights.get(name)!;
    const w = t.toFloat32Array();
    f(w);
    t.backend.write(t.buf, w);
  };
  edit('model.embed_tokens.weight', (w) => {
    for (let i = 0; i < w.length; i += C) w[i]! += 1;
  });
  edit('lm_head.weight', (w) => {
    for (const v of VISION) {
      w.fill(0, v * C, (v + 1) * C);
      w[v * C] = 3;
    }
  });
  const out = join(root, 'biased');
  await engine.save(out);
  engine.dispose();
  return out;
}

const sampling = (over: Partial<SamplingParams> = {}): SamplingParams => ({
  maxNewTokens: 10,
  temperature: 1,
  seed: 5,
  ...over,
});

const visionIn = (gens: readonly Generation[]) => gens.flatMap((g) => g.tokens.filter((t) => VISION.has(t)));

/** The teacher-forced log-probs of each prompt + completion row (with its images) at the completion's tokens. */
async function teacherForced(
  engine: TrainableEngine,
  prompts: readonly (readonly number[])[],
  gens: readonly Generation[],
  images?: (RgbImage[] | undefined)[],
): Promise<number[][]> {
  const rows = prompts.map((p, i) => [...p, ...gens[i]!.tokens]);
  const batch = { ...sequenceBatch(rows), ...(images ? { images } : {}) };
  const { logprobs, entropy } = await engine.forward(batch, { role: 'policy', entropy: true });
  // every entropy of the renormalized distribution is a number (a suppressed logit times its 0 probability stays 0)
  rows.forEach((r, i) =>
    entropy!.subarray(i * batch.T + 1, i * batch.T + r.length).forEach((h) => expect(h).toBeGreaterThan(-1e-6)),
  );
  return prompts.map((p, i) => Array.from(logprobs.subarray(i * batch.T + p.length, i * batch.T + rows[i]!.length)));
}

function expectClose(got: number[][], want: readonly Generation[]): void {
  got.forEach((lp, i) => {
    expect(lp.length).toBe(want[i]!.logprobs.length);
    lp.forEach((x, j) => expect(Math.abs(x - want[i]!.logprobs[j]!)).toBeLessThan(1e-4));
  });
}

/** One policy-gradient step on the rows (loss -mean log-prob of the completions): it must run and move the weights. */
async function trainStep(
  engine: TrainableEngine,
  prompts: readonly (readonly number[])[],
  gens: readonly Generation[],
  images?: (RgbImage[] | undefined)[],
): Promise<void> {
  const rows = prompts.map((p, i) => [...p, ...gens[i]!.tokens]);
  const batch = { ...sequenceBatch(rows), ...(images ? { images } : {}) };
  const grad = new Float32Array(batch.B * batch.T);
  prompts.forEach((p, i) => grad.fill(-1, i * batch.T + p.length, i * batch.T + rows[i]!.length));
  const out = await engine.backward(batch, { role: 'policy' }, () => ({ logprobs: grad }));
  expect(Array.from(out.logprobs).every(Number.isFinite)).toBe(true);
  const step = await engine.optimizerStep('policy', { lr: 1e-3 });
  expect(step.skipped).toBe(false);
  expect(step.gradNorm).toBeGreaterThan(0);
}

/** A row whose completion holds <|image_pad|>: refused before the model sees it. */
async function expectRefused(engine: TrainableEngine): Promise<void> {
  const rows = [
    [...textPrompts[0]!, 40, 41],
    [...textPrompts[0]!, 40, IMAGE_PAD, 41],
  ];
  await expect(engine.forward(sequenceBatch(rows), { role: 'policy' })).rejects.toThrow(
    `Row 1 of the batch holds <|image_pad|> (id ${IMAGE_PAD}) at position ${textPrompts[0]!.length + 1} outside an image's`,
  );
}

let biased: string;
beforeAll(async () => {
  biased = await biasedModel();
}, 300_000);

describe.each(['native', 'wasm'] as const)(
  'the local engine on a VLM biased toward its vision tokens (%s)',
  (backend) => {
    let engine: LocalEngine;
    beforeAll(async () => {
      if (testBackend(backend)) engine = await LocalEngine.fromPretrained(biased, { backend });
    }, 120_000);
    afterAll(() => engine?.dispose());

    it.skipIf(!testBackend(backend))(
      'samples vision tokens only when suppression is off',
      async () => {
        const off = engine.policy.suppressedTokens;
        engine.policy.suppressedTokens = null;
        try {
          const gens = await engine.generate(textPrompts, sampling());
          expect(visionIn(gens).length).toBeGreaterThan(10); // the bias works: most tokens are vision tokens
        } finally {
          engine.policy.suppressedTokens = off;
        }
        expect([...off!].sort()).toEqual([...VISION].sort());
      },
      120_000,
    );

    it.skipIf(!testBackend(backend))(
      'never samples them on any path, and its log-probs are the teacher-forced ones',
      async () => {
        // prompts with an image: generateVL (each prefilled alone, decoded in one batch)
        const withImage = [imagePrompt, textPrompts[0]!];
        const images = [[image], undefined];
        for (const over of [{}, { temperature: 0 }, { topP: 0.9, topK: 50 }]) {
          const gens = await engine.generate(withImage, sampling({ ...over, images }));
          expect(visionIn(gens)).toEqual([]);
          expectClose(await teacherForced(engine, withImage, gens, images), gens);
        }
        // text prompts: the fused decoder (its kernels on this backend) and the op-by-op path
        for (const fastDecode of [true, false]) {
          const gens = generate(engine.policy, textPrompts, { ...sampling(), fastDecode });
          expect(visionIn(gens)).toEqual([]);
          expectClose(await teacherForced(engine, textPrompts, gens), gens);
        }
        const gens = await engine.generate(withImage, sampling({ images }));
        await trainStep(engine, withImage, gens, images);
        await expectRefused(engine);
      },
      120_000,
    );
  },
);

describe.skipIf(!python)('the torch engine on a VLM biased toward its vision tokens', () => {
  let engine: TorchEngine;
  beforeAll(async () => {
    engine = await TorchEngine.fromPretrained(biased, {
      python: python!,
      device: 'cpu',
      precision: 'float32',
      echoStderr: false,
    });
  }, 120_000);
  afterAll(() => engine?.dispose());

  it('never samples them, its log-probs are the teacher-forced ones, and it trains on them', async () => {
    const withImage = [imagePrompt, ...textPrompts];
    const images = [[image], undefined, undefined];
    for (const over of [{}, { temperature: 0 }, { topP: 0.9, topK: 50 }]) {
      const gens = await engine.generate(withImage, sampling({ ...over, images }));
      expect(visionIn(gens)).toEqual([]);
      expectClose(await teacherForced(engine, withImage, gens, images), gens);
    }
    const gens = await engine.generate(withImage, sampling({ images }));
    await trainStep(engine, withImage, gens, images);
    await expectRefused(engine);
  }, 300_000);
});
