// The study's figures rasterised by headless chromium: a real PNG at twice the SVG's size whose pixels show the
// drawing (a red square drawn in the SVG is red in the PNG). Skipped without chromium unless RAGEN_REQUIRE_BACKENDS=1.
import '../../envs/index.js'; // the built-in environments
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { chromiumPath, writePngs } from './index.js';

function available(): boolean {
  if (existsSync(chromiumPath())) return true;
  if (process.env.RAGEN_REQUIRE_BACKENDS === '1')
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires chromium at ${chromiumPath()} for the study's figures; apt-get install chromium.`,
    );
  return false;
}

/** Width, height and the RGB of pixel (x, y) of an 8-bit RGB/RGBA non-interlaced PNG. */
function pngPixel(buf: Buffer, x: number, y: number): { width: number; height: number; rgb: number[] } {
  expect(buf.subarray(0, 8)).toEqual(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
  const width = buf.readUInt32BE(16),
    height = buf.readUInt32BE(20),
    colorType = buf[25]!;
  const bpp = colorType === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let o = 8; o < buf.length;) {
    const len = buf.readUInt32BE(o);
    if (buf.toString('ascii', o + 4, o + 8) === 'IDAT') idat.push(buf.subarray(o + 8, o + 8 + len));
    o += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const rows: Buffer[] = [];
  for (let r = 0; r <= y; r++) {
    // undo the per-row filters up to row y
    const f = raw[r * (stride + 1)]!;
    const line = Buffer.from(raw.subarray(r * (stride + 1) + 1, (r + 1) * (stride + 1)));
    const prev = rows[r - 1];
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? line[i - bpp]! : 0,
        b = prev ? prev[i]! : 0,
        c = prev && i >= bpp ? prev[i - bpp]! : 0;
      const p = a + b - c,
        pa = Math.abs(p - a),
        pb = Math.abs(p - b),
        pc = Math.abs(p - c);
      const pred =
        f === 1
          ? a
          : f === 2
            ? b
            : f === 3
              ? (a + b) >> 1
              : f === 4
                ? pa <= pb && pa <= pc
                  ? a
                  : pb <= pc
                    ? b
                    : c
                : 0;
      line[i] = (line[i]! + pred) & 255;
    }
    rows.push(line);
  }
  return { width, height, rgb: [...rows[y]!.subarray(x * bpp, x * bpp + 3)] };
}

describe.skipIf(!available())('study figures as PNG', () => {
  it('renders an SVG at 2x with its colours where it drew them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen2-png-'));
    const svg =
      '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="60"><rect width="100" height="60" fill="#fff"/><rect x="50" y="0" width="50" height="60" fill="#ff0000"/></svg>';
    const [file] = await writePngs([{ name: 'half-red', width: 100, height: 60, svg }], dir);
    const png = readFileSync(file!);
    const left = pngPixel(png, 20, 30);
    expect([left.width, left.height]).toEqual([200, 120]);
    expect(left.rgb).toEqual([255, 255, 255]);
    expect(pngPixel(png, 180, 30).rgb).toEqual([255, 0, 0]);
  }, 60_000);
});
