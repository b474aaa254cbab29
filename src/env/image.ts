// Drawing RGB images in code for visual envs: a blank image, filled rectangles and discs, pixel reads.
import type { RgbImage } from './core.js';

/** A colour as [red, green, blue], 0-255 each. */
export type Rgb = readonly [number, number, number];

/** A `width` x `height` image filled with `colour`. */
export function blankImage(width: number, height: number, colour: Rgb): RgbImage {
  const image = { width, height, data: new Uint8Array(width * height * 3) };
  fillRect(image, 0, 0, width, height, colour);
  return image;
}

/** Paints the `w` x `h` rectangle whose top-left pixel is (x, y), clipped to the image. */
export function fillRect(image: RgbImage, x: number, y: number, w: number, h: number, colour: Rgb): void {
  const x0 = Math.max(0, x);
  const y0 = Math.max(0, y);
  const x1 = Math.min(image.width, x + w);
  const y1 = Math.min(image.height, y + h);
  const [r, g, b] = colour;
  const data = image.data;
  for (let py = y0; py < y1; py++) {
    for (let i = (py * image.width + x0) * 3, end = (py * image.width + x1) * 3; i < end; i += 3) {
      data[i] = r;
      data[i + 1] = g;
      data[i + 2] = b;
    }
  }
}

/** Paints the pixels whose centres lie within `radius` of (cx, cy) (pixel units, centres at half-integers). */
export function fillDisc(image: RgbImage, cx: number, cy: number, radius: number, colour: Rgb): void {
  const y0 = Math.max(0, Math.floor(cy - radius));
  const y1 = Math.min(image.height, Math.ceil(cy + radius));
  const x0 = Math.max(0, Math.floor(cx - radius));
  const x1 = Math.min(image.width, Math.ceil(cx + radius));
  const r2 = radius * radius;
  for (let py = y0; py < y1; py++) {
    const dy = py + 0.5 - cy;
    for (let px = x0; px < x1; px++) {
      const dx = px + 0.5 - cx;
      if (dx * dx + dy * dy > r2) continue;
      const i = (py * image.width + px) * 3;
      image.data[i] = colour[0];
      image.data[i + 1] = colour[1];
      image.data[i + 2] = colour[2];
    }
  }
}

/** The colour of pixel (x, y). */
export function pixelAt(image: RgbImage, x: number, y: number): Rgb {
  const i = (y * image.width + x) * 3;
  return [image.data[i]!, image.data[i + 1]!, image.data[i + 2]!];
}
