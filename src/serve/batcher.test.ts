import { describe, expect, it } from 'vitest';
import type { Engine, ForwardResult, Generation, SamplingParams } from '../engine/index.js';
import { Batcher, ClientGone, cut, type BatchJob } from './batcher.js';

/** An engine that records its calls and answers prompt p with tokens p[0]+1, p[0]+2, ... (stop id 0 never sampled). */
class RecordingEngine implements Engine {
  readonly kind = 'recording';
  calls: { prompts: number[][]; params: SamplingParams }[] = [];
  /** Resolves the call in flight (a call waits for it, so tests can submit while it runs). */
  release: (() => void) | undefined;
  hold = false;

  async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    this.calls.push({ prompts: prompts.map((p) => p.slice()), params });
    if (this.hold) await new Promise<void>((r) => (this.release = r));
    return prompts.map((p) => {
      const tokens = Array.from({ length: params.maxNewTokens }, (_, i) => p[0]! + i + 1);
      return { tokens, logprobs: tokens.map((t) => -t / 100), finishReason: 'length' };
    });
  }

  async forward(): Promise<ForwardResult> {
    throw new Error('not used');
  }
}

const job = (first: number, over: Partial<BatchJob> = {}): BatchJob => ({
  prompt: [first, 7],
  maxTokens: 3,
  temperature: 0,
  topP: 1,
  topK: 0,
  stopTokenIds: [0],
  stopStrings: [],
  ...over,
});

describe('Batcher', () => {
  it('puts jobs submitted together into one generate call, each cut to its own max tokens', async () => {
    const engine = new RecordingEngine();
    const b = new Batcher(engine, { batchWindowMs: 0 });
    const gens = await Promise.all([
      b.submit(job(10, { maxTokens: 2 })),
      b.submit(job(20, { maxTokens: 4 })),
      b.submit(job(30)),
    ]);
    expect(engine.calls).toHaveLength(1);
    expect(engine.calls[0]!.prompts.map((p) => p[0])).toEqual([10, 20, 30]);
    expect(engine.calls[0]!.params.maxNewTokens).toBe(4);
    expect(gens.map((g) => g.tokens)).toEqual([
      [11, 12],
      [21, 22, 23, 24],
      [31, 32, 33],
    ]);
    expect(gens[0]!.logprobs).toEqual([-0.11, -0.12]);
    expect(b.stats).toEqual({ batches: 1, jobs: 3, maxBatch: 3, tokens: 9 });
  });

  it('sends jobs that arrive while a call runs together in the next call, not one call each', async () => {
    const engine = new RecordingEngine();
    engine.hold = true;
    const b = new Batcher(engine, { batchWindowMs: 0 });
    const first = b.submit(job(1));
    await new Promise((r) => setTimeout(r, 5)); // the first call is running (held)
    const later = [2, 3, 4, 5].map((x) => b.submit(job(x)));
    await new Promise((r) => setTimeout(r, 5));
    expect(engine.calls).toHaveLength(1);
    engine.hold = false;
    engine.release!();
    await Promise.all([first, ...later]);
    expect(engine.calls.map((c) => c.prompts.map((p) => p[0]))).toEqual([[1], [2, 3, 4, 5]]);
  });

  it('splits jobs whose sampling settings differ, runs seeded jobs alone, respects maxBatchSize', async () => {
    const engine = new RecordingEngine();
    const b = new Batcher(engine, { batchWindowMs: 0, maxBatchSize: 2 });
    await Promise.all([
      b.submit(job(1)),
      b.submit(job(2, { temperature: 0.7 })),
      b.submit(job(3)),
      b.submit(job(4, { temperature: 0.7, seed: 5 })),
      b.submit(job(5)),
      b.submit(job(6, { stopStrings: ['</answer>'] })),
    ]);
    const calls = engine.calls.map((c) => c.prompts.map((p) => p[0]));
    expect(calls).toEqual([[1, 3], [2], [4], [5], [6]]);
    expect(engine.calls[2]!.params.seed).toBe(5);
    expect(engine.calls[4]!.params.stopStrings).toEqual(['</answer>']);
  });

  it('drops a job whose client is gone before its batch starts', async () => {
    const engine = new RecordingEngine();
    const b = new Batcher(engine, { batchWindowMs: 20 });
    const gone = new AbortController();
    const dropped = b.submit(job(1), gone.signal);
    const kept = b.submit(job(2));
    gone.abort();
    await expect(dropped).rejects.toBeInstanceOf(ClientGone);
    await kept;
    expect(engine.calls.map((c) => c.prompts.map((p) => p[0]))).toEqual([[2]]);
    await expect(b.submit(job(3), gone.signal)).rejects.toBeInstanceOf(ClientGone); // already gone
  });

  it("cut: a stop past the job's max never happened for it", () => {
    const g: Generation = { tokens: [5, 6, 7, 0], logprobs: [-1, -2, -3, -4], finishReason: 'stop' };
    expect(cut(g, 2)).toEqual({ tokens: [5, 6], logprobs: [-1, -2], finishReason: 'length' });
    expect(cut(g, 4)).toBe(g);
  });
});
