// Images on the env wire: each as `{width, height, format: "png", data: <base64 PNG>}` inside the observation object
// (docs/environments.md, "Image observations"). PNG because it is lossless, small for flat tiles, and what OpenAI
// `image_url` data: URLs carry, so the bytes can go on to a VLM server unchanged.
import { decodePng, encodePng, PngError, type RgbImage } from '../../util/index.js';

/** One image of an observation on the wire. `width`/`height` repeat the PNG's so a client can check them unread. */
export interface WireImage {
  width: number;
  height: number;
  format: 'png';
  /** The PNG file, base64. */
  data: string;
}

/** Encodings of images already sent: a visual env returns the same image object while its state is unchanged. */
const encoded = new WeakMap<RgbImage, WireImage>();

/** `image` as a wire image (encoded once per image object). */
export function imageToWire(image: RgbImage): WireImage {
  let wire = encoded.get(image);
  if (wire === undefined) {
    wire = {
      width: image.width,
      height: image.height,
      format: 'png',
      data: Buffer.from(encodePng(image)).toString('base64'),
    };
    encoded.set(image, wire);
  }
  return wire;
}

/**
 * The RGB image of a wire image; throws `PngError` with a sentence naming `where` when it is malformed, not a PNG, or
 * its PNG's size differs from the declared width and height.
 */
export function imageFromWire(wire: unknown, where: string): RgbImage {
  const w = wire as Partial<WireImage> | null;
  if (typeof w !== 'object' || w === null || typeof w.data !== 'string')
    throw new PngError(
      `${where}: an image must be {width, height, format: "png", data: <base64>}, got ${short(wire)}.`,
    );
  if (w.format !== 'png')
    throw new PngError(`${where}: image format ${short(w.format)} is not supported; send "png" (base64 PNG bytes).`);
  let image: RgbImage;
  try {
    image = decodePng(Buffer.from(w.data, 'base64'));
  } catch (err) {
    throw new PngError(`${where}: ${(err as Error).message}`);
  }
  if (image.width !== w.width || image.height !== w.height)
    throw new PngError(
      `${where}: the image declares ${short(w.width)}x${short(w.height)} but its PNG is ${image.width}x${image.height}.`,
    );
  return image;
}

function short(x: unknown): string {
  const s = JSON.stringify(x) ?? String(x);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
