// The study's figures rasterised by headless chromium: a real PNG at twice the SVG's size whose pixels show the
// drawing (a red square drawn in the SVG is red in the PNG). Skipped without chromium unless RAGEN_REQUIRE_BACKENDS=1.
import '../../envs/index.js'; // the built-in environments
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodePng } from '../../util/index.js';
import { chromiumPath, writePngs } from './index.js';

function available(): boolean {
  if (existsSync(chromiumPath())) return true;
  if (process.env.RAGEN_REQUIRE_BACKENDS === '1')
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires chromium at ${chromiumPath()} for the study's figures; apt-get install chromium.`,
    );
  return false;
}

/** Width, height and the RGB of pixel (x, y) of a PNG, read by the library's decoder (src/util/png.ts). */
function pngPixel(buf: Buffer, x: number, y: number): { width: number; height: number; rgb: number[] } {
  const image = decodePng(buf);
  const i = (y * image.width + x) * 3;
  return { width: image.width, height: image.height, rgb: [...image.data.subarray(i, i + 3)] };
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
