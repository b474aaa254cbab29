import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelConfig } from '../model/index.js';
import { liveTensors, setBackend } from '../tensor/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';
import type { ForwardResult, OutputGradients, SequenceBatch } from './types.js';

const config = modelConfig({
  vocabSize: 30,
  hiddenSize: 32,
  intermediateSize: 48,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
});
const seqs = sequenceBatch([
  [1, 2, 3, 4, 5, 6],
  [7, 8, 9],
  [10, 11, 12, 13],
]);

/** Whether entry i of a token-aligned (B, T) array scores a token (t >= 1, inside the row). */
const scored = (b: SequenceBatch, i: number) => i % b.T > 0 && i % b.T < b.lengths[Math.floor(i / b.T)]!;

/** `f(x, i)` on the scored entries of a token-aligned array, 0 elsewhere. */
const onScored = (b: SequenceBatch, x: Float32Array, f: (x: number, i: number) => number) =>
  x.map((v, i) => (scored(b, i) ? f(v, i) : 0));

/** SFT: loss = -mean log p over all scored tokens; d loss / d logprob = -1 / N. */
function sftGrad(out: ForwardResult, b: SequenceBatch = seqs): OutputGradients {
  const n = out.logprobs.filter((_, i) => scored(b, i)).length;
  return { logprobs: onScored(b, out.logprobs, () => -1 / n) };
}

function meanLogprob(out: ForwardResult, b: SequenceBatch = seqs): number {
  const all = Array.from(out.logprobs).filter((_, i) => scored(b, i));
  return all.reduce((a, x) => a + x, 0) / all.length;
}

function snapshot(engine: LocalEngine, role: 'policy' | 'critic'): Float32Array[] {
  return engine.parameters(role).map(([, t]) => t.toFloat32Array());
}

describe('LocalEngine', () => {
  beforeAll(() => setBackend('js'));

  it('generates, and forward reproduces the sampled log-probs', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const prompts = [
      [1, 2, 3],
      [4, 5],
    ];
    const gens = await engine.generate(prompts, { maxNewTokens: 5, temperature: 1, seed: 2 });
    const batch = sequenceBatch(prompts.map((p, i) => [...p, ...gens[i]!.tokens]));
    const fwd = await engine.forward(batch, { role: 'policy', entropy: true });
    prompts.forEach((p, i) =>
      gens[i]!.logprobs.forEach((lp, j) =>
        expect(Math.abs(lp - fwd.logprobs[i * batch.T + p.length + j]!)).toBeLessThan(1e-4),
      ),
    );
    fwd.entropy!.forEach((x, i) => expect(scored(batch, i) ? x > 0 && x <= Math.log(30) + 1e-5 : x === 0).toBe(true));
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
    const n = seqs.lengths.reduce((a, L) => a + L - 1, 0);
    const grad =
      (b: SequenceBatch) =>
      (out: ForwardResult): OutputGradients => ({ logprobs: onScored(b, out.logprobs, () => -1 / n) });
    const first = sequenceBatch([[1, 2, 3, 4, 5, 6]]);
    const rest = sequenceBatch([
      [7, 8, 9],
      [10, 11, 12, 13],
    ]);
    await whole.backward(seqs, { role: 'policy' }, grad(seqs));
    await parts.backward(first, { role: 'policy' }, grad(first));
    await parts.backward(rest, { role: 'policy' }, grad(rest));
    whole.parameters('policy').forEach(([name, t], i) => {
      const a = t.grad!.toFloat32Array();
      const b = parts.parameters('policy')[i]![1].grad!.toFloat32Array();
      a.forEach((x, j) => expect(Math.abs(x - b[j]!), name).toBeLessThan(1e-6 + 1e-4 * Math.abs(x)));
    });
  });

  it('with gradientCheckpointing gives the same gradients as without (shared critic, values in the policy pass)', async () => {
    const make = (gradientCheckpointing: boolean) =>
      LocalEngine.create(config, { seed: 6, critic: 'shared', gradientCheckpointing });
    const grads = async (engine: LocalEngine) => {
      await engine.backward(seqs, { role: 'policy', values: true, entropy: true }, (out) => ({
        logprobs: onScored(seqs, out.logprobs, (_, i) => Math.sin(i)),
        entropy: onScored(seqs, out.entropy!, (_, i) => Math.cos(i)),
        values: onScored(seqs, out.values!, () => 0.5),
      }));
      return [...engine.parameters('policy'), ...engine.parameters('critic')].map(([n, t]) => [n, t.grad!] as const);
    };
    const plain = await grads(make(false));
    const ckpt = await grads(make(true));
    expect(ckpt.length).toBe(plain.length);
    plain.forEach(([name, g], i) => {
      const a = g.toFloat32Array();
      const b = ckpt[i]![1].toFloat32Array();
      expect(
        a.some((x) => x !== 0),
        name,
      ).toBe(true);
      a.forEach((x, j) => expect(Math.abs(x - b[j]!), name).toBeLessThan(1e-6 + 1e-5 * Math.abs(x)));
    });
  });

  it('skips the update on non-finite gradients', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const before = snapshot(engine, 'policy');
    await engine.backward(seqs, { role: 'policy' }, (out) => ({ logprobs: out.logprobs.map(() => NaN) }));
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
      const vloss = (out: ForwardResult): number =>
        Array.from(out.values!).reduce((a, v, i) => a + (scored(seqs, i) ? (v - target) ** 2 : 0), 0);
      const first = vloss(await engine.forward(seqs, { role: 'critic' }));
      for (let i = 0; i < 10; i++) {
        await engine.backward(seqs, { role: 'critic' }, (out) => ({
          values: onScored(seqs, out.values!, (x) => (2 * (x - target)) / 12),
        }));
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
    expect((await b.forward(seqs, { role: 'critic' })).values).toEqual(
      (await a.forward(seqs, { role: 'critic' })).values,
    );
  });

  it('leaks no tensors over repeated generate / forward / backward / step', async () => {
    const engine = LocalEngine.create(config, {
      seed: 1,
      lora: { r: 2, alpha: 4, dropout: 0.1 },
      reference: true,
      critic: 'separate',
    });
    const round = async (): Promise<void> => {
      await engine.generate([[1, 2], [3]], { maxNewTokens: 4, temperature: 1, seed: 0, stopTokenIds: [5] });
      await engine.forward(seqs, { role: 'reference' });
      await engine.backward(seqs, { role: 'policy', entropy: true }, (o) => ({
        ...sftGrad(o),
        entropy: onScored(seqs, o.entropy!, () => 0.01),
      }));
      await engine.optimizerStep('policy', { lr: 1e-3, maxGradNorm: 1 });
      await engine.backward(seqs, { role: 'critic' }, (o) => ({ values: onScored(seqs, o.values!, (x) => x / 10) }));
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
    const mixed = sequenceBatch([
      [1, 2],
      [3, 4, 5, 6, 7, 8],
      [9, 10, 11],
      [12, 13, 14, 15],
    ]);
    const a = await engine.forward(mixed, { role: 'policy', entropy: true });
    const b = await small.forward(mixed, { role: 'policy', entropy: true });
    expect(Array.from(b.logprobs, (x, i) => scored(mixed, i) === (x !== 0))).not.toContain(false);
    b.logprobs.forEach((x, i) => expect(x).toBeCloseTo(a.logprobs[i]!, 5));
    b.entropy!.forEach((x, i) => expect(x).toBeCloseTo(a.entropy![i]!, 5));
  });

  it('handles a 1-token sequence (nothing to score) beside longer ones', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    const out = await engine.forward(sequenceBatch([[5], [1, 2, 3]]), { role: 'policy', entropy: true });
    expect(Array.from(out.logprobs, (x) => x !== 0)).toEqual([false, false, false, false, true, true]);
    expect(Array.from(out.entropy!, (x) => x !== 0)).toEqual([false, false, false, false, true, true]);
    await expect(
      engine.forward(
        { B: 1, T: 2, ids: new Int32Array(2), attentionMask: new Uint8Array(2), lengths: Int32Array.of(0) },
        { role: 'policy' },
      ),
    ).rejects.toThrow(/row 0 has length 0/);
  });

  it('copies the tokenizer into checkpoints and uses it for stop strings', async () => {
    const tokDir = join(import.meta.dirname, '../../models/tokenizer-tiny');
    const { loadTokenizer } = await import('../tokenizer/index.js');
    const tok = loadTokenizer(tokDir);
    const big = modelConfig({
      vocabSize: tok.vocabSize,
      hiddenSize: 16,
      intermediateSize: 24,
      numLayers: 1,
      numHeads: 2,
    });
    const dir = mkdtempSync(join(tmpdir(), 'engine-tok-'));
    await new LocalEngine({
      policy: LocalEngine.create(big, { seed: 1 }).policy,
      tokenizerPath: join(tokDir, 'tokenizer.json'),
    }).save(dir);
    const engine = await LocalEngine.fromPretrained(dir);
    const free = await engine.generate([tok.encode('Turn 1:')], { maxNewTokens: 12, temperature: 1, seed: 3 });
    const text = tok.decode(free[0]!.tokens);
    const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 1);
    const [g] = await engine.generate([tok.encode('Turn 1:')], {
      maxNewTokens: 12,
      temperature: 1,
      seed: 3,
      stopStrings: [stop],
    });
    expect(g!.finishReason).toBe('stop');
    expect(tok.decode(g!.tokens)).toContain(stop);
    expect(g!.tokens.length).toBeLessThan(free[0]!.tokens.length + 1);
  });

  it('says what is missing when a role is not configured', async () => {
    const engine = LocalEngine.create(config, { seed: 1 });
    await expect(engine.forward(seqs, { role: 'reference' })).rejects.toThrow(
      /no reference model; create it with reference: true/,
    );
    await expect(engine.forward(seqs, { role: 'critic' })).rejects.toThrow(/no critic/);
  });
});
