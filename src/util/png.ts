// PNG in and out for RGB images (the env wire, data: URLs): an 8-bit RGB encoder and a decoder for the non-interlaced
// PNGs clients send (grey, RGB, palette, with or without alpha, 1-16 bits). Follows the PNG spec (W3C, 3rd edition).
import { crc32, deflateSync, inflateSync } from 'node:zlib';
import { RagenError } from './errors.js';

/**
 * An RGB image: `data` holds `width * height * 3` bytes, row-major from the top left, red, green, blue per pixel.
 * Treat it as read-only: an env may return the same image again while the state is unchanged.
 */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Bytes that are not a PNG this decoder reads; the message says what was found and what is accepted. */
export class PngError extends RagenError {}

const SIGNATURE = Uint8Array.of(137, 80, 78, 71, 13, 10, 26, 10);

/** Whether `bytes` start with PNG's 8-byte signature. */
export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && SIGNATURE.every((b, i) => bytes[i] === b);
}

/** `image` as an 8-bit RGB PNG (filter 0 on every row: deflate finds the repeats of tiled images by itself). */
export function encodePng(image: RgbImage): Uint8Array {
  const { width, height, data } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
    throw new PngError(`Cannot encode a ${width}x${height} image as PNG: width and height must be positive integers.`);
  if (data.length !== width * height * 3)
    throw new PngError(
      `Cannot encode a ${width}x${height} RGB image whose data has ${data.length} bytes; it needs ${width * height * 3}.`,
    );
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height); // each row: filter byte 0, then the pixels
  for (let y = 0; y < height; y++) raw.set(data.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function chunk(type: string, body: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32BE(body.length, 0);
  out.write(type, 4, 'latin1');
  out.set(body, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + body.length)), 8 + body.length);
  return out;
}

/** Samples per pixel of each colour type: grey 0, RGB 2, palette 3, grey+alpha 4, RGBA 6. */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
const DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };

/**
 * The RGB pixels of a PNG. Alpha is dropped (as PIL's `convert('RGB')` does), 16-bit samples keep their high byte, grey
 * is spread to three channels. Interlaced (Adam7) PNGs are refused with a sentence saying how to re-save them.
 * `maxPixels` bounds what a client can make us allocate.
 */
export function decodePng(bytes: Uint8Array, maxPixels = 64 << 20): RgbImage {
  if (!isPng(bytes))
    throw new PngError(`Not a PNG: the bytes start with ${hexStart(bytes)}, not the PNG signature 89 50 4e 47.`);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let header: Buffer | undefined;
  let palette: Buffer | undefined;
  const idat: Buffer[] = [];
  for (let o = 8; ;) {
    if (o + 12 > buf.length)
      throw new PngError(`The PNG ends at byte ${buf.length} before its IEND chunk (truncated).`);
    const len = buf.readUInt32BE(o);
    const type = buf.toString('latin1', o + 4, o + 8);
    if (o + 12 + len > buf.length)
      throw new PngError(`The PNG's ${type} chunk at byte ${o} runs past the end of the data (truncated).`);
    const body = buf.subarray(o + 8, o + 8 + len);
    if (crc32(buf.subarray(o + 4, o + 8 + len)) !== buf.readUInt32BE(o + 8 + len))
      throw new PngError(`The PNG's ${type} chunk at byte ${o} fails its CRC check (corrupted).`);
    if (type === 'IHDR') header = body;
    else if (type === 'PLTE') palette = body;
    else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    o += 12 + len;
  }
  if (!header || header.length !== 13) throw new PngError('The PNG has no 13-byte IHDR chunk.');
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const depth = header[8]!;
  const colour = header[9]!;
  if (width < 1 || height < 1 || width * height > maxPixels)
    throw new PngError(`The PNG is ${width}x${height}; images must have between 1 and ${maxPixels} pixels.`);
  const channels = CHANNELS[colour];
  if (channels === undefined || !DEPTHS[colour]!.includes(depth))
    throw new PngError(`The PNG has colour type ${colour} at bit depth ${depth}, which the PNG spec does not allow.`);
  if (header[12] !== 0)
    throw new PngError('The PNG is interlaced (Adam7), which this decoder does not read; save it without interlacing.');
  if (colour === 3 && !palette) throw new PngError('The PNG is palette-based but has no PLTE chunk.');
  const bitsPerPixel = channels * depth;
  const stride = Math.ceil((width * bitsPerPixel) / 8);
  const bpp = Math.max(1, bitsPerPixel >> 3); // the filters' byte distance to the pixel on the left
  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat));
  } catch (err) {
    throw new PngError(`The PNG's image data does not inflate (${(err as Error).message}).`);
  }
  if (raw.length < (stride + 1) * height)
    throw new PngError(
      `The PNG's image data has ${raw.length} bytes; a ${width}x${height} image needs ${(stride + 1) * height}.`,
    );
  const out = new Uint8Array(width * height * 3);
  let prev: Uint8Array = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const line = unfilter(
      raw[y * (stride + 1)]!,
      raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)),
      prev,
      bpp,
    );
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 3;
      if (colour === 3) {
        const i = sample(line, x, depth) * 3;
        if (i + 2 >= palette!.length)
          throw new PngError(`The PNG uses palette entry ${i / 3}, past its PLTE's ${palette!.length / 3}.`);
        out[o] = palette![i]!;
        out[o + 1] = palette![i + 1]!;
        out[o + 2] = palette![i + 2]!;
      } else if (channels <= 2) {
        const g = depth < 8 ? (sample(line, x, depth) * 255) / ((1 << depth) - 1) : line[x * channels * (depth >> 3)]!;
        out[o] = out[o + 1] = out[o + 2] = g;
      } else {
        const p = x * channels * (depth >> 3);
        const step = depth >> 3; // 16-bit: the high byte of each sample
        out[o] = line[p]!;
        out[o + 1] = line[p + step]!;
        out[o + 2] = line[p + 2 * step]!;
      }
    }
    prev = line;
  }
  return { width, height, data: out };
}

/** Undoes one row's filter (None, Sub, Up, Average, Paeth) in a copy. */
function unfilter(filter: number, row: Uint8Array, prev: Uint8Array, bpp: number): Uint8Array {
  const line = Uint8Array.from(row);
  if (filter > 4) throw new PngError(`The PNG has a row with filter type ${filter}; the spec has 0-4.`);
  for (let i = 0; i < line.length; i++) {
    const a = i >= bpp ? line[i - bpp]! : 0;
    const b = prev[i]!;
    const c = i >= bpp ? prev[i - bpp]! : 0;
    let pred = 0;
    if (filter === 1) pred = a;
    else if (filter === 2) pred = b;
    else if (filter === 3) pred = (a + b) >> 1;
    else if (filter === 4) {
      const p = a + b - c;
      const pa = Math.abs(p - a);
      const pb = Math.abs(p - b);
      const pc = Math.abs(p - c);
      pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
    }
    line[i] = (line[i]! + pred) & 255;
  }
  return line;
}

/** The `x`th sample of a row packed at `depth` < 8 bits (most significant bits first), or the byte at `x`. */
function sample(line: Uint8Array, x: number, depth: number): number {
  if (depth === 8) return line[x]!;
  const bit = x * depth;
  return (line[bit >> 3]! >> (8 - depth - (bit & 7))) & ((1 << depth) - 1);
}

function hexStart(bytes: Uint8Array): string {
  return bytes.length === 0
    ? '(nothing)'
    : [...bytes.subarray(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
}
