import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../model/index.js';
import { liveTensors, setBackend } from '../tensor/index.js';
import { LocalEngine } from './local.js';
import type { ForwardResult, OutputGradients } from './types.js';

const config = modelConfig({ vocabSize: 30, hiddenSize: 32, intermediateSize: 48, numLayers: 2, numHeads: 4, numKvHeads: 2 });
const seqs = [[1, 2, 3, 4, 5, 6], [7, 8, 9], [10, 11, 12, 13]];

/** SFT: loss = -mean log p over all predicted tokens; d loss / d logprob = -1 / N. */
function sftGrad(out: ForwardResult): OutputGradients {
  const n = out.logprobs.reduce((a, l) => a + l.length, 0);
  return { logprobs: out.logprobs.map((l) => new Float32Array(l.length).fill(-1 / n)) };
}

function meanLogprob(out: ForwardResult): number {
  const all = out.logprobs.flatMap((l) => [...l]);
  return all.reduce((a, b) => a + b, 0) / all.length;
}

function snapshot(engine: LocalEngine, role: 'policy' | 'critic'): Float32Array[] {
  return engine.parameters(role).map(([, t]) => t.toFloat32Array());
}

describe('LocalEngine', () => {
  beforeAll(() => setBackend('js'));

  it('generates, and forward reproduces the sampled log-probs', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const prompts = [[1, 2, 3], [4, 5]];
    const gens = await engine.generate(prompts, { maxNewTokens: 5, temperature: 1, seed: 2 });
    const fwd = await engine.forward(prompts.map((p, i) => [...p, ...gens[i]!.tokens]), { role: 'policy', entropy: true });
    prompts.forEach((p, i) => gens[i]!.logprobs.forEach((lp, j) => expect(Math.abs(lp - fwd.logprobs[i]![p.length - 1 + j]!)).toBeLessThan(1e-4)));
    expect(fwd.entropy!.every((e) => e.every((x) => x > 0 && x <= Math.log(30) + 1e-5))).toBe(true);
  });

  it('trains: SFT raises the log-likelihood, every parameter moves, gradients are zeroed', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const before = snapshot(engine, 'policy');
    const first = meanLogprob(await engine.forward(seqs, { role: 'policy' }));
    for (let i = 0; i < 5; i++) {
      await engine.backward(seqs, { role: 'policy' }, sftGrad);
      const r = await engine.optimizerStep('policy', { lr: 1e-2, maxGradNorm: 1 });
      expect(r.skipped).toBe(false);
      expect(r.gradNorm).toBeGreaterThan(0);
    }
    expect(meanLogprob(await engine.forward(seqs, { role: 'policy' }))).toBeGreaterThan(first + 0.1);
    snapshot(engine, 'policy').forEach((p, i) => expect(p, engine.parameters('policy')[i]![0]).not.toEqual(before[i]));
    expect(engine.parameters('policy').every(([, t]) => t.grad === null)).toBe(true);
  });

  it('accumulates gradients over micro-batches (two halves = one batch)', async () => {
    const whole = LocalEngine.create(config, { seed: 4 });
    const parts = LocalEngine.create(config, { seed: 4 });
    const n = seqs.reduce((a, s) => a + s.length - 1, 0);
    const grad = (out: ForwardResult): OutputGradients => ({ logprobs: out.logprobs.map((l) => new Float32Array(l.length).fill(-1 / n)) });
    await whole.backward(seqs, { role: 'policy' }, grad);
    await parts.backward(seqs.slice(0, 1), { role: 'policy' }, grad);
    await parts.backward(seqs.slice(1), { role: 'policy' }, grad);
    whole.parameters('policy').forEach(([name, t], i) => {
      const a = t.grad!.toFloat32Array();
      const b = parts.parameters('policy')[i]![1].grad!.toFloat32Array();
      a.forEach((x, j) => expect(Math.abs(x - b[j]!), name).toBeLessThan(1e-6 + 1e-4 * Math.abs(x)));
    });
  });

  it('skips the update on non-finite gradients', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const before = snapshot(engine, 'policy');
    await engine.backward(seqs, { role: 'policy' }, (out) => ({ logprobs: out.logprobs.map((l) => new Float32Array(l.length).fill(NaN)) }));
    const r = await engine.optimizerStep('policy', { lr: 1e-2 });
    expect(r.skipped).toBe(true);
    expect(snapshot(engine, 'policy')).toEqual(before);
  });

  it('LoRA: only adapters train; the base is the frozen reference', async () => {
    const engine = LocalEngine.create(config, { seed: 2, lora: { r: 2, alpha: 4 }, reference: true });
    const ref0 = await engine.forward(seqs, { role: 'reference' });
    expect((await engine.forward(seqs, { role: 'policy' })).logprobs).toEqual(ref0.logprobs);
    await engine.backward(seqs, { role: 'policy' }, sftGrad);
    await engine.optimizerStep('policy', { lr: 1e-2 });
    expect(engine.parameters('policy').every(([n]) => n.includes('lora_'))).toBe(true);
    expect((await engine.forward(seqs, { role: 'reference' })).logprobs).toEqual(ref0.logprobs);
    expect((await engine.forward(seqs, { role: 'policy' })).logprobs).not.toEqual(ref0.logprobs);
  });

  for (const mode of ['shared', 'separate'] as const) {
    it(`a ${mode} critic regresses values toward targets`, async () => {
      const engine = LocalEngine.create(config, { seed: 3, critic: mode });
      const target = 0.5;
      const vloss = (out: ForwardResult): number => out.values!.flatMap((v) => [...v]).reduce((a, v) => a + (v - target) ** 2, 0);
      const first = vloss(await engine.forward(seqs, { role: 'critic' }));
      for (let i = 0; i < 10; i++) {
        await engine.backward(seqs, { role: 'critic' }, (out) => ({ values: out.values!.map((v) => v.map((x) => 2 * (x - target) / 12)) }));
        await engine.optimizerStep('critic', { lr: 1e-2 });
        if (mode === 'shared') engine.zeroGrad('policy'); // trunk gradients of the value loss are the policy's to use or drop
      }
      expect(vloss(await engine.forward(seqs, { role: 'critic' }))).toBeLessThan(first * 0.5);
    });
  }

  it('save(optimizer) -> fromPretrained -> loadOptimizer resumes exactly', async () => {
    const a = LocalEngine.create(config, { seed: 5, critic: 'separate' });
    const settings = { lr: 1e-2, maxGradNorm: 1 };
    await a.backward(seqs, { role: 'policy' }, sftGrad);
    await a.optimizerStep('policy', settings);
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    await a.save(dir, { optimizer: true });
    const b = await LocalEngine.fromPretrained(dir, { critic: 'separate' });
    await b.loadOptimizer(dir);
    for (const e of [a, b]) {
      await e.backward(seqs, { role: 'policy' }, sftGrad);
      await e.optimizerStep('policy', settings);
    }
    const pa = snapshot(a, 'policy');
    snapshot(b, 'policy').forEach((p, i) => expect(p).toEqual(pa[i]));
    expect((await b.forward(seqs, { role: 'critic' })).values).toEqual((await a.forward(seqs, { role: 'critic' })).values);
  });

  it('leaks no tensors over repeated generate / forward / backward / step', async () => {
    const engine = LocalEngine.create(config, { seed: 1, lora: { r: 2, alpha: 4, dropout: 0.1 }, reference: true, critic: 'separate' });
    const round = async (): Promise<void> => {
      await engine.generate([[1, 2], [3]], { maxNewTokens: 4, temperature: 1, seed: 0, stopTokenIds: [5] });
      await engine.forward(seqs, { role: 'reference' });
      await engine.backward(seqs, { role: 'policy', entropy: true }, (o) => ({ ...sftGrad(o), entropy: o.entropy!.map((e) => e.map(() => 0.01)) }));
      await engine.optimizerStep('policy', { lr: 1e-3, maxGradNorm: 1 });
      await engine.backward(seqs, { role: 'critic' }, (o) => ({ values: o.values!.map((v) => v.map((x) => x / 10)) }));
      await engine.optimizerStep('critic', { lr: 1e-3 });
    };
    await round();
    const live = liveTensors();
    for (let i = 0; i < 3; i++) await round();
    expect(liveTensors()).toBe(live);
  });

  it('forward in small length-sorted chunks returns each sequence in its own place', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const small = new LocalEngine({ policy: engine.policy, forwardTokenBudget: 7 });
    const mixed = [[1, 2], [3, 4, 5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15]];
    const a = await engine.forward(mixed, { role: 'policy', entropy: true });
    const b = await small.forward(mixed, { role: 'policy', entropy: true });
    expect(b.logprobs.map((l) => l.length)).toEqual([1, 5, 2, 3]);
    b.logprobs.forEach((l, i) => l.forEach((x, j) => expect(x).toBeCloseTo(a.logprobs[i]![j]!, 5)));
    b.entropy!.forEach((l, i) => l.forEach((x, j) => expect(x).toBeCloseTo(a.entropy![i]![j]!, 5)));
  });

  it('handles a 1-token sequence (nothing to score) beside longer ones', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const out = await engine.forward([[5], [1, 2, 3]], { role: 'policy', entropy: true });
    expect(out.logprobs.map((l) => l.length)).toEqual([0, 2]);
    expect(out.entropy!.map((l) => l.length)).toEqual([0, 2]);
    await expect(engine.forward([[]], { role: 'policy' })).rejects.toThrow(/non-empty sequences/);
  });

  it('copies the tokenizer into checkpoints and uses it for stop strings', async () => {
    const tokDir = join(import.meta.dirname, '../../models/tokenizer-tiny');
    const { loadTokenizer } = await import('../tokenizer/index.js');
    const tok = loadTokenizer(tokDir);
    const big = modelConfig({ vocabSize: tok.vocabSize, hiddenSize: 16, intermediateSize: 24, numLayers: 1, numHeads: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'engine-tok-'));
    await new LocalEngine({ policy: LocalEngine.create(big, { seed: 1 }).policy, tokenizerPath: join(tokDir, 'tokenizer.json') }).save(dir);
    const engine = await LocalEngine.fromPretrained(dir);
    const free = await engine.generate([tok.encode('Turn 1:')], { maxNewTokens: 12, temperature: 1, seed: 3 });
    const text = tok.decode(free[0]!.tokens);
    const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 1);
    const [g] = await engine.generate([tok.encode('Turn 1:')], { maxNewTokens: 12, temperature: 1, seed: 3, stopStrings: [stop] });
    expect(g!.finishReason).toBe('stop');
    expect(tok.decode(g!.tokens)).toContain(stop);
    expect(g!.tokens.length).toBeLessThan(free[0]!.tokens.length + 1);
  });

  it('says what is missing when a role is not configured', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    await expect(engine.forward(seqs, { role: 'reference' })).rejects.toThrow(/no reference model; create it with reference: true/);
    await expect(engine.forward(seqs, { role: 'critic' })).rejects.toThrow(/no critic/);
  });
});
