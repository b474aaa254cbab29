// The PNG codec: our encoder's files read back by our decoder and by Pillow's fixtures' rules, the decoder against
// PNGs Pillow wrote in every colour type (fixtures/png-pil.json, made by fixtures/make-png-fixtures.py), every row
// filter written by hand here, and refusals that say what is wrong.
import { readFileSync } from 'node:fs';
import { deflateSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodePng, encodePng, isPng, PngError, type RgbImage } from './png.js';
import { Rng } from './rng.js';

const fixtures = JSON.parse(readFileSync(new URL('./fixtures/png-pil.json', import.meta.url), 'utf8')) as {
  width: number;
  height: number;
  cases: { name: string; png: string; rgb: string }[];
};

function noise(width: number, height: number, seed: number): RgbImage {
  const rng = new Rng(seed);
  return { width, height, data: Uint8Array.from({ length: width * height * 3 }, () => rng.int(256)) };
}

/** A PNG whose rows are written with the given filters (cycled), by the spec's forward formulas. */
function filteredPng(image: RgbImage, filters: number[]): Uint8Array {
  const stride = image.width * 3;
  const rows: number[] = [];
  for (let y = 0; y < image.height; y++) {
    const f = filters[y % filters.length]!;
    rows.push(f);
    for (let i = 0; i < stride; i++) {
      const at = (yy: number, ii: number) => (yy < 0 || ii < 0 ? 0 : image.data[yy * stride + ii]!);
      const x = at(y, i),
        a = at(y, i - 3),
        b = at(y - 1, i),
        c = at(y - 1, i - 3);
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const pred = [0, a, b, Math.floor((a + b) / 2), paeth][f]!;
      rows.push((x - pred + 256) & 255);
    }
  }
  // Replace our encoder's IDAT (filter 0 everywhere) with these rows: same header, same framing.
  const plain = Buffer.from(encodePng(image));
  const idatAt = plain.indexOf('IDAT') - 4;
  const body = deflateSync(Buffer.from(rows));
  const idat = Buffer.alloc(12 + body.length);
  idat.writeUInt32BE(body.length, 0);
  idat.write('IDAT', 4, 'latin1');
  body.copy(idat, 8);
  idat.writeUInt32BE(crc(idat.subarray(4, 8 + body.length)), 8 + body.length);
  const idatEnd = idatAt + 12 + plain.readUInt32BE(idatAt);
  return Buffer.concat([plain.subarray(0, idatAt), idat, plain.subarray(idatEnd)]);
}

/** CRC-32 (IEEE), bit by bit, independent of the codec's zlib.crc32. */
function crc(bytes: Uint8Array): number {
  let c = ~0;
  for (const byte of bytes) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

describe('encodePng', () => {
  it('writes a PNG signature, an RGB 8-bit header of the right size and the pixels as rows of filter 0', () => {
    const image = noise(5, 3, 1);
    const png = Buffer.from(encodePng(image));
    expect(isPng(png)).toBe(true);
    expect([png.readUInt32BE(16), png.readUInt32BE(20), png[24], png[25]]).toEqual([5, 3, 8, 2]);
    const idatAt = png.indexOf('IDAT') - 4;
    const raw = inflateSync(png.subarray(idatAt + 8, idatAt + 8 + png.readUInt32BE(idatAt)));
    expect(raw.length).toBe(3 * (1 + 15));
    expect([...raw.subarray(16 + 1, 32)]).toEqual([...image.data.subarray(15, 30)]);
    expect(png.readUInt32BE(idatAt + 8 + png.readUInt32BE(idatAt))).toBe(
      crc(png.subarray(idatAt + 4, idatAt + 8 + png.readUInt32BE(idatAt))),
    );
  });

  it('round-trips through the decoder, byte for byte', () => {
    for (const [w, h] of [
      [1, 1],
      [7, 5],
      [96, 64],
    ] as const) {
      const image = noise(w, h, w * h);
      expect(decodePng(encodePng(image))).toEqual(image);
    }
  });

  it('refuses data of the wrong length, naming both lengths', () => {
    expect(() => encodePng({ width: 2, height: 2, data: new Uint8Array(11) })).toThrow(/11 bytes; it needs 12/);
  });
});

describe('decodePng', () => {
  for (const c of fixtures.cases) {
    it(`reads Pillow's ${c.name} PNG as Pillow reads it`, () => {
      const image = decodePng(Buffer.from(c.png, 'base64'));
      expect([image.width, image.height]).toEqual([fixtures.width, fixtures.height]);
      expect(Buffer.from(image.data).toString('base64')).toBe(c.rgb);
    });
  }

  it('undoes each of the five row filters', () => {
    const image = noise(9, 10, 7);
    for (const f of [0, 1, 2, 3, 4]) expect(decodePng(filteredPng(image, [f])).data).toEqual(image.data);
    expect(decodePng(filteredPng(image, [4, 3, 2, 1, 0])).data).toEqual(image.data);
  });

  it('refuses non-PNG bytes, truncation, a bad CRC and interlacing with sentences', () => {
    expect(() => decodePng(Buffer.from('GIF89a....'))).toThrow(/Not a PNG: the bytes start with 47 49 46 38/);
    const png = Buffer.from(encodePng(noise(4, 4, 3)));
    expect(() => decodePng(png.subarray(0, png.length - 20))).toThrow(PngError);
    const flipped = Buffer.from(png);
    flipped[45] = flipped[45]! ^ 1; // inside IDAT's data
    expect(() => decodePng(flipped)).toThrow(/IDAT chunk at byte 33 fails its CRC check/);
    const interlaced = Buffer.from(png);
    interlaced[28] = 1;
    interlaced.writeUInt32BE(crc(interlaced.subarray(12, 29)), 29);
    expect(() => decodePng(interlaced)).toThrow(/interlaced \(Adam7\).*save it without interlacing/);
  });

  it('refuses images over the pixel limit before inflating them', () => {
    expect(() => decodePng(encodePng(noise(10, 10, 2)), 99)).toThrow(/10x10; images must have between 1 and 99 pixels/);
  });
});
