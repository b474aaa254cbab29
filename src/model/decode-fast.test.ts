// Each fused decode (native: a kernel call per layer; wasm: one per step, and its fused prefill) against the readable
// reference, the op-by-op Transformer.hidden() on the js backend's TypeScript kernels (tokens equal, log-probs within
// 1e-4), and against teacher forcing: odd sizes, left padding, GQA and plain MHA, q/k/v and o biases, q/k norm,
// LoRA merged, stops that compact the batch.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getBackend, liveTensors, noGrad, setBackend, type BackendName } from '../tensor/index.js';
import type { IsaPath } from '../tensor/native-addon.js';
import type { NativeBackend } from '../tensor/native-backend.js';
import { nativeIsaPaths, testBackend } from '../tensor/testing.js';
import { modelConfig, type ModelConfig } from './config.js';
import { FastDecoder, hasFastDecode } from './decode-fast.js';
import { packSequences, tokenForward, unpack } from './forward.js';
import { generate, type Completion, type GenerateOptions } from './generate.js';
import { LoraAdapters } from './lora.js';
import { Transformer } from './transformer.js';

// Every backend that loads must have the fused decode: a loaded backend without it fails here rather than skipping.
const backends = (['native', 'wasm'] as const).filter((b) => testBackend(b));
const withoutFused = backends.filter((b) => !hasFastDecode((setBackend(b), getBackend())));
setBackend('js');

it('every loaded fast backend (native, wasm) has the fused decode', () => expect(withoutFused).toEqual([]));

const cases: [string, ModelConfig][] = [
  [
    'qwen2, GQA 3:1, hidden 24 (not a multiple of 16), head dim 8',
    modelConfig({
      modelType: 'qwen2',
      vocabSize: 37,
      hiddenSize: 24,
      intermediateSize: 40,
      numLayers: 2,
      numHeads: 3,
      numKvHeads: 1,
    }),
  ],
  [
    'qwen3 q/k norm, head dim 40 (32-column blocks + a tail), MHA, untied',
    modelConfig({
      modelType: 'qwen3',
      vocabSize: 53,
      hiddenSize: 48,
      intermediateSize: 70,
      numLayers: 2,
      numHeads: 2,
      numKvHeads: 2,
      headDim: 40,
      tieWordEmbeddings: false,
    }),
  ],
  [
    'llama with q/k/v and o biases, GQA 4:2, head dim 32',
    modelConfig({
      modelType: 'llama',
      vocabSize: 40,
      hiddenSize: 64,
      intermediateSize: 96,
      numLayers: 3,
      numHeads: 4,
      numKvHeads: 2,
      qkvBias: true,
      oBias: true,
    }),
  ],
];
// lengths 1..9: left padding in the shared cache, batch sizes that leave partial 6-row GEMM blocks
const prompts = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [7, 8], [9], [3, 1, 4, 1, 5], [2, 7, 1, 8, 2, 8, 1], [5, 5, 5]];

function teacherForced(model: Transformer, seqs: number[][]): Float32Array[] {
  const batch = packSequences(seqs);
  return noGrad(() => unpack(tokenForward(model, batch).logprobs!.toFloat32Array(), batch));
}

/** `make()` built on the js backend (the same seeded weights) and sampled op by op there: the reference completions. */
function reference(
  make: () => Transformer,
  prompts: readonly number[][],
  opts: GenerateOptions,
  fast: BackendName,
): Completion[] {
  setBackend('js');
  try {
    const m = make();
    expect(m.backend.name).toBe('js');
    return generate(m, prompts, { ...opts, fastDecode: false });
  } finally {
    setBackend(fast);
  }
}

function expectSame(fast: Completion[], ref: Completion[]): void {
  expect(fast.map((g) => g.tokens)).toEqual(ref.map((g) => g.tokens));
  expect(fast.map((g) => g.finishReason)).toEqual(ref.map((g) => g.finishReason));
  fast.forEach((g, i) => g.logprobs.forEach((lp, j) => expect(Math.abs(lp - ref[i]!.logprobs[j]!)).toBeLessThan(1e-4)));
}

// The native backend once per instruction-set path of its kernels (native/isa.h); a path the cores lack is skipped,
// its reason in the name.
const variants: { backend: 'native' | 'wasm'; path?: IsaPath; skip: string | null }[] = [
  ...backends.filter((b) => b === 'wasm').map((b) => ({ backend: b, skip: null })),
  ...nativeIsaPaths().map((p) => ({ backend: 'native' as const, ...p })),
];

for (const { backend, path, skip } of variants)
  describe.skipIf(skip !== null)(
    `fused decode step [${backend}${path ? `, ${path} path` : ''}]${skip ? ` (skipped: ${skip})` : ''}`,
    () => {
      beforeAll(() => {
        setBackend(backend);
        if (path) expect((getBackend() as NativeBackend).setIsa(path)).toBe(path);
      });
      afterAll(() => {
        if (path) (getBackend() as NativeBackend).setIsa('avx512');
        setBackend('js');
      });
      decodeStepCases(backend);
    },
  );

function decodeStepCases(backend: 'native' | 'wasm'): void {
  for (const [name, cfg] of cases) {
    it(`matches the js reference and teacher forcing: ${name}`, () => {
      const make = (): Transformer => Transformer.init(cfg, 11, 0.3);
      const m = make();
      for (const params of [{ temperature: 1 }, { temperature: 0.8, topP: 0.9, topK: 7 }, { temperature: 0 }]) {
        const opts: GenerateOptions = { maxNewTokens: 10, seed: 4, stopTokenIds: [3], fastDecode: true, ...params };
        const live = liveTensors();
        const fast = generate(m, prompts, opts);
        expect(liveTensors()).toBe(live); // packed weights, scratch and cache all freed
        expectSame(fast, reference(make, prompts, opts, backend));
        const tf = teacherForced(
          m,
          prompts.map((p, i) => [...p, ...fast[i]!.tokens]),
        );
        prompts.forEach((p, i) =>
          fast[i]!.logprobs.forEach((lp, j) => expect(Math.abs(lp - tf[i]![p.length - 1 + j]!)).toBeLessThan(1e-4)),
        );
      }
    });
  }

  it('splits a large batch over the two threads (40 sequences, 20 rows each: three 6-row blocks and a 2-row one) with the same results', () => {
    const make = (): Transformer => Transformer.init(cases[2]![1], 8, 0.3);
    const many = Array.from({ length: 40 }, (_, i) =>
      Array.from({ length: 1 + (i % 7) }, (_, t) => (i * 7 + t * 3) % 40),
    );
    const opts: GenerateOptions = { maxNewTokens: 5, temperature: 1, seed: 9, fastDecode: true };
    expectSame(generate(make(), many, opts), reference(make, many, opts, backend));
  });

  it('uses the merged LoRA weights', () => {
    const make = (): Transformer => {
      const m = Transformer.init(cases[2]![1], 6, 0.3);
      const lora = LoraAdapters.attach(
        m,
        { r: 2, alpha: 4, targetModules: ['q_proj', 'o_proj', 'up_proj', 'down_proj'] },
        1,
      );
      noGrad(() =>
        lora.parameters().forEach(([, t]) =>
          t.backend.write(
            t.buf,
            t.toFloat32Array().map((_, i) => 0.1 * Math.sin(i + 1)),
          ),
        ),
      );
      return m;
    };
    const opts: GenerateOptions = { maxNewTokens: 6, temperature: 1, seed: 5, fastDecode: true };
    expectSame(generate(make(), prompts, opts), reference(make, prompts, opts, backend));
  });
}

describe.skipIf(!testBackend('wasm'))('fused prefill [wasm]', () => {
  beforeAll(() => void setBackend('wasm'));
  afterAll(() => void setBackend('js'));

  it('runs whole prompts through the fused layers (chunks of sequences, split over the threads) with the results of the js reference; a prompt over 256 tokens falls back', () => {
    const make = (): Transformer => Transformer.init(cases[2]![1], 3, 0.3);
    const m = make();
    const spy = vi.spyOn(FastDecoder.prototype, 'prefill');
    try {
      // 13 prompts of 1-60 tokens: with a cache of 64 slots a chunk holds 128 rows, so the longest go two by two
      const mixed = Array.from({ length: 13 }, (_, i) =>
        Array.from({ length: 1 + ((i * 23) % 60) }, (_, t) => (i * 5 + t * 7) % 40),
      );
      for (const [batch, fusedPrefill] of [
        [mixed, true],
        [[...mixed.slice(0, 3), Array.from({ length: 300 }, (_, t) => t % 40)], false],
      ] as const) {
        spy.mockClear();
        const opts: GenerateOptions = { maxNewTokens: 4, temperature: 1, seed: 2, fastDecode: true };
        const fast = generate(m, batch, opts);
        expect(spy.mock.calls.length).toBe(fusedPrefill ? 1 : 0);
        expectSame(
          fast,
          reference(
            make,
            batch.map((p) => [...p]),
            opts,
            'wasm',
          ),
        );
      }
    } finally {
      spy.mockRestore();
    }
  });
});
