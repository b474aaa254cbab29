// The torch worker protocol's frames: encoding and incremental decoding (any chunking), and garbage rejected.
import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameReader } from './torch-protocol.js';

describe('torch worker frames', () => {
  it('round-trip a header and typed arrays, whatever the chunking of the stream', () => {
    const a = encodeFrame(
      { op: 'forward', id: 3 },
      { ids: Int32Array.from([1, -2, 300000]), lp: Float32Array.from([0.5, -1e-3]), m: Uint8Array.from([1, 0, 1]) },
    );
    const b = encodeFrame({ op: 'save', dir: 'x' });
    const stream = Buffer.concat([a, b]);
    for (const step of [1, 7, 16, stream.length]) {
      const r = new FrameReader();
      const frames = [];
      for (let i = 0; i < stream.length; i += step) frames.push(...r.push(stream.subarray(i, i + step)));
      expect(frames.map((f) => f.header)).toEqual([
        { op: 'forward', id: 3 },
        { op: 'save', dir: 'x' },
      ]);
      expect(Array.from(frames[0]!.buffers.ids!)).toEqual([1, -2, 300000]);
      expect(frames[0]!.buffers.lp).toEqual(Float32Array.from([0.5, -1e-3]));
      expect(Array.from(frames[0]!.buffers.m!)).toEqual([1, 0, 1]);
    }
  });

  it('rejects bytes that are not a frame, quoting them', () => {
    expect(() => new FrameReader().push(Buffer.from('Traceback (most recent call last):\n  File ...'))).toThrow(
      /not a protocol frame on stdout: "Traceback/,
    );
  });
});
