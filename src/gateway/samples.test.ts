// The merge and split rule on hand-built call records: extensions merge (loss only on sampled ids), rewritten
// history splits, interleaved conversations stay apart, every sample carries the episode's reward, and a sample with
// image calls holds their images in order (other pixels under the same ids split).
import { describe, expect, it } from 'vitest';
import type { RgbImage } from '../util/index.js';
import type { CallRecord } from './episodes.js';
import { chainCalls, samplesFromCalls } from './samples.js';

let next = 0;
/** A call record; log-probs are -(id / 100) so each sampled id's log-prob is recognisable. */
function call(promptIds: number[], completionIds: number[], index = next++): CallRecord {
  return {
    index,
    promptIds,
    completionIds,
    logprobs: completionIds.map((id) => -id / 100),
    finishReason: 'stop',
    text: '',
    messages: [],
    tools: null,
  };
}

describe('samples from calls', () => {
  it('merges a call whose prompt extends the previous prompt + completion into one sequence, loss on sampled ids only', () => {
    // Call 0: prompt [1 2 3] -> sampled [10 11]; the agent adds a tool result [4 5]; call 1 samples [12].
    const chains = chainCalls([call([1, 2, 3], [10, 11], 0), call([1, 2, 3, 10, 11, 4, 5], [12], 1)]);
    expect(chains).toHaveLength(1);
    expect(chains[0]).toEqual({
      ids: [1, 2, 3, 10, 11, 4, 5, 12],
      lossMask: [0, 0, 0, 1, 1, 0, 0, 1],
      logprobs: [0, 0, 0, -0.1, -0.11, 0, 0, -0.12],
      callIds: [-1, -1, -1, 0, 0, -1, -1, 1],
      calls: [0, 1],
      images: [],
    });
  });

  it('splits when a prompt rewrites history (one token differs, or the completion was trimmed)', () => {
    const changed = chainCalls([call([1, 2, 3], [10, 11], 0), call([1, 2, 9, 10, 11, 4], [12], 1)]);
    expect(changed.map((c) => c.calls)).toEqual([[0], [1]]);
    expect(changed[1]!.lossMask).toEqual([0, 0, 0, 0, 0, 0, 1]); // the old reply is prompt now, not trained on again
    const trimmed = chainCalls([call([1, 2, 3], [10, 11], 0), call([1, 2, 3, 10, 4], [12], 1)]);
    expect(trimmed.map((c) => c.calls)).toEqual([[0], [1]]);
  });

  it('merges an exact continuation with nothing between (a prompt equal to prompt + completion)', () => {
    expect(chainCalls([call([1], [2], 0), call([1, 2], [3], 1)]).map((c) => c.ids)).toEqual([[1, 2, 3]]);
  });

  it('keeps two interleaved conversations as two chains, each merged', () => {
    const chains = chainCalls([
      call([1, 2], [10], 0),
      call([7, 8], [20], 1),
      call([1, 2, 10, 3], [11], 2),
      call([7, 8, 20, 9], [21], 3),
    ]);
    expect(chains.map((c) => c.calls)).toEqual([
      [0, 2],
      [1, 3],
    ]);
  });

  it('continues the most recently extended chain when two could be extended', () => {
    // Call 1 rewrites call 0's reply to the same prefix, so call 2 extends both [1 2 10] prefixes; it continues the
    // latest.
    const chains = chainCalls([call([1, 2], [10], 0), call([1, 2], [10], 1), call([1, 2, 10, 5], [11], 2)]);
    expect(chains.map((c) => c.calls)).toEqual([[0], [1, 2]]);
  });

  it('orders calls by arrival, not by when they finished, and skips empty completions', () => {
    const chains = chainCalls([call([1, 2, 10, 4], [12], 1), call([1, 2], [10], 0), call([5], [], 2)]);
    expect(chains.map((c) => c.calls)).toEqual([[0, 1]]);
  });

  it("gives every sample the episode reward on its last sampled token, turns numbered by the episode's calls", () => {
    const samples = samplesFromCalls(
      [call([1, 2], [10, 11], 0), call([1, 2, 10, 11, 3], [12, 13], 1), call([6], [14], 2)],
      0.5,
      { episode: 4, group: 1, tag: 'agent' },
    );
    expect(samples).toHaveLength(2);
    expect(samples[0]!.rewards).toEqual([0, 0, 0, 0, 0, 0, 0.5]);
    expect(samples[0]!.turnIds).toEqual([-1, -1, 0, 0, -1, 1, 1]);
    expect(samples[0]!.turns).toEqual([0, 1]);
    expect(samples[1]!.rewards).toEqual([0, 0.5]);
    expect(samples[1]!.turnIds).toEqual([-1, 2]); // the episode's third call, though its sample's first
    expect(samples[1]!.turns).toEqual([2]);
    for (const s of samples)
      expect([s.score, s.episode, s.group, s.tag, s.length]).toEqual([0.5, 4, 1, 'agent', s.ids.length]);
  });

  it("keeps every merged call's images in order on the sample, and splits a call whose earlier images differ", () => {
    const PAD = 99;
    /** A 2 x 1 image filled with `v`: decoded afresh per call, as the gateway decodes each request's parts. */
    const img = (v: number): RgbImage => ({ width: 2, height: 1, data: new Uint8Array(6).fill(v) });
    const withImages = (c: CallRecord, images: RgbImage[]): CallRecord => ({ ...c, images });
    // call 0 shows image a; call 1 resends it (another decode, same pixels) and adds b; call 2 shows c where a was
    const calls = [
      withImages(call([1, PAD, 2], [10], 0), [img(7)]),
      withImages(call([1, PAD, 2, 10, 3, PAD, 4], [11], 1), [img(7), img(8)]),
      withImages(call([1, PAD, 2, 10, 3, PAD, 4, 11, 5], [12], 2), [img(9), img(8)]),
    ];
    const samples = samplesFromCalls(calls, 1, { episode: 0, group: 0, tag: 'vl' });
    expect(samples.map((s) => s.turns)).toEqual([[0, 1], [2]]);
    expect(samples[0]!.images).toEqual([img(7), img(8)]);
    expect(samples[1]!.images).toEqual([img(9), img(8)]);
    // text calls give samples without images
    expect(samplesFromCalls([call([1], [2], 0)], 1, { episode: 0, group: 0, tag: 't' })[0]!.images).toBeUndefined();
  });

  it('refuses a record whose log-probs do not match its ids', () => {
    const bad = { ...call([1], [2, 3], 0), logprobs: [-1] };
    expect(() => chainCalls([bad])).toThrow(/2 completion ids but 1 log-probs/);
  });
});
