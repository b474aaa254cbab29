// Sampling from Qwen2.5-VL with images: the KV-cached decode (positions shifted by the images' delta) agrees with a
// full forward over prompt + completion, and the image changes what is sampled.
import { afterEach, describe, expect, it } from 'vitest';
import { getBackend, noGrad, setBackend } from '../tensor/index.js';
import { generateVL, vlTokenLogprobs } from './qwen2-vl-generate.js';
import { IDS, IMAGE, jitteredVL, TINY_VL, visionInput } from './qwen2-vl-testing.js';

describe('generateVL', () => {
  const prev = getBackend().name;
  afterEach(() => setBackend(prev));

  it("a completion's tokens and log-probs equal a full forward's over prompt + completion (greedy and sampled)", () => {
    setBackend('js');
    const m = jitteredVL(2);
    const input = visionInput();
    for (const temperature of [0, 1]) {
      const out = generateVL(m, [[...IDS]], [input], { maxNewTokens: 8, temperature, seed: 3 })[0]!;
      expect(out.tokens).toHaveLength(8);
      // a sampled <|image_pad|> would read as an image in the full forward: vision tokens are suppressed
      expect(out.tokens).not.toContain(IMAGE);
      const all = Int32Array.from([...IDS, ...out.tokens]);
      const full = noGrad(() => vlTokenLogprobs(m, all, input).toFloat32Array()).slice(IDS.length - 1);
      out.logprobs.forEach((lp, i) => expect(lp, `token ${i}`).toBeCloseTo(full[i]!, 4));
      if (temperature === 0) {
        // each greedy token is the argmax of the full forward's logits at its position, the vision tokens left out
        const logits = noGrad(() => m.logits(m.hidden(all, input)).toFloat32Array());
        const V = TINY_VL.text.vocabSize;
        const off = new Set(m.lm.suppressedTokens);
        out.tokens.forEach((tok, i) => {
          const at = logits.subarray((IDS.length - 1 + i) * V, (IDS.length + i) * V);
          const row = Array.from(at, (z, id) => (off.has(id) ? -Infinity : z));
          expect(tok).toBe(row.indexOf(Math.max(...row)));
        });
      }
    }
    m.dispose();
  });

  it('different pixels change the log-probs of the same completion; stop ids end it', () => {
    setBackend('js');
    const m = jitteredVL(2);
    const a = visionInput();
    const b = { ...a, pixels: a.pixels.map((v) => -v) };
    const out = generateVL(m, [[...IDS]], [a], { maxNewTokens: 6, temperature: 0, seed: 1 })[0]!;
    const all = Int32Array.from([...IDS, ...out.tokens]);
    const la = noGrad(() => vlTokenLogprobs(m, all, a).toFloat32Array());
    const lb = noGrad(() => vlTokenLogprobs(m, all, b).toFloat32Array());
    expect(Math.max(...la.map((v, i) => Math.abs(v - lb[i]!)))).toBeGreaterThan(1e-4);
    const [stopped] = generateVL(m, [[...IDS]], [a], {
      ...{ maxNewTokens: 6, temperature: 0, seed: 1 },
      stopTokenIds: [out.tokens[1]!],
    });
    expect(stopped!.tokens).toEqual(out.tokens.slice(0, out.tokens.indexOf(out.tokens[1]!) + 1));
    expect(stopped!.finishReason).toBe('stop');
    m.dispose();
  });

  it('a batch of prompts (images, none, other lengths) samples as each prompt does alone, left padding and all', () => {
    setBackend('js');
    const m = jitteredVL(4);
    const a = visionInput();
    const b = { ...a, pixels: a.pixels.map((v) => 0.5 * v + 0.1) };
    // lengths 13, 5 and 16: the shorter rows are left-padded in the batch's cache; each has its own position shift
    const prompts = [[...IDS], [3, 7, 5, 9, 11], [4, 8, ...IDS, 6]];
    const images = [a, undefined, b];
    for (const temperature of [0, 1]) {
      const batch = generateVL(m, prompts, images, { maxNewTokens: 7, temperature, seed: 5 });
      prompts.forEach((p, i) => {
        // greedy: the tokens of a batch of one
        if (temperature === 0) {
          const [alone] = generateVL(m, [p], [images[i]], { maxNewTokens: 7, temperature, seed: 5 });
          expect(batch[i]!.tokens, `prompt ${i}`).toEqual(alone!.tokens);
        }
        // the log-probs are a full forward's over prompt + completion
        const all = Int32Array.from([...p, ...batch[i]!.tokens]);
        const full = noGrad(() => vlTokenLogprobs(m, all, images[i]).toFloat32Array()).slice(p.length - 1);
        batch[i]!.logprobs.forEach((lp, t) => expect(lp, `prompt ${i} token ${t}`).toBeCloseTo(full[t]!, 4));
      });
    }
    m.dispose();
  });
});
