// Frames of the torch worker's protocol (python/ragen_torch/protocol.py is the other side): magic `RGT1`, u32 header
// length, u64 body length (little-endian), a JSON header, then the body: the arrays the header's `buffers` lists, raw.

/** Protocol version this side speaks; the worker's handshake must name the same. */
export const PROTOCOL_VERSION = 1;
const MAGIC = 'RGT1';
const PREFIX = 16;

export type FrameArray = Int32Array | Float32Array | Uint8Array;
const DTYPES = { i32: Int32Array, f32: Float32Array, u8: Uint8Array } as const;
type DType = keyof typeof DTYPES;

/** A decoded frame: its JSON header and arrays by name. */
export interface Frame {
  header: Record<string, unknown>;
  buffers: Record<string, FrameArray>;
}

function dtypeOf(a: FrameArray): DType {
  return a instanceof Int32Array ? 'i32' : a instanceof Float32Array ? 'f32' : 'u8';
}

/** One frame as bytes: `header` (plain JSON) and 1-D arrays by name. */
export function encodeFrame(header: Record<string, unknown>, buffers: Record<string, FrameArray> = {}): Buffer {
  const entries = Object.entries(buffers);
  const descr = entries.map(([name, a]) => ({ name, dtype: dtypeOf(a), shape: [a.length] }));
  const h = Buffer.from(JSON.stringify({ ...header, buffers: descr }), 'utf8');
  const body = entries.map(([, a]) => Buffer.from(a.buffer, a.byteOffset, a.byteLength));
  const bodyLen = body.reduce((n, b) => n + b.length, 0);
  const prefix = Buffer.alloc(PREFIX);
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(h.length, 4);
  prefix.writeBigUInt64LE(BigInt(bodyLen), 8);
  return Buffer.concat([prefix, h, ...body]);
}

/** Incremental decoder of a byte stream into frames; anything that is not a frame throws (garbage on stdout). */
export class FrameReader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes the frame being received needs (its prefix read), so that chunks are joined once, not per chunk. */
  private need = 16;

  /** Feed bytes; returns the frames completed by them. */
  push(data: Buffer): Frame[] {
    this.chunks.push(data);
    this.size += data.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.size < this.need) break;
      const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.chunks = [buf];
      const magic = buf.toString('latin1', 0, 4);
      if (magic !== MAGIC)
        throw new Error(
          `the worker wrote bytes that are not a protocol frame on stdout: ${JSON.stringify(buf.toString('utf8', 0, Math.min(buf.length, 80)))}`,
        );
      const hlen = buf.readUInt32LE(4);
      const blen = Number(buf.readBigUInt64LE(8));
      const total = PREFIX + hlen + blen;
      this.need = total;
      if (buf.length < total) break;
      const header = JSON.parse(buf.toString('utf8', PREFIX, PREFIX + hlen)) as Record<string, unknown>;
      const buffers: Record<string, FrameArray> = {};
      let off = PREFIX + hlen;
      for (const d of (header.buffers as { name: string; dtype: DType; shape: number[] }[] | undefined) ?? []) {
        const Ctor = DTYPES[d.dtype];
        if (!Ctor) throw new Error(`the worker sent a buffer of unknown dtype ${JSON.stringify(d.dtype)}`);
        const n = d.shape.reduce((a, b) => a * b, 1);
        const bytes = n * Ctor.BYTES_PER_ELEMENT;
        const copy = new Uint8Array(bytes); // aligned copy: the frame's offset need not be a multiple of 4
        copy.set(buf.subarray(off, off + bytes));
        buffers[d.name] = new Ctor(copy.buffer, 0, n);
        off += bytes;
      }
      delete header.buffers;
      frames.push({ header, buffers });
      const rest = buf.subarray(total);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.size = rest.length;
      this.need = PREFIX;
    }
    return frames;
  }
}
