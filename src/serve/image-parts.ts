// OpenAI `image_url` content parts: an image given inline as a data: URL (PNG decoded by our own codec). Nothing is
// fetched: an http(s) URL is refused with a sentence saying why and what to send instead.
import { IMAGE_PLACEHOLDER } from '../tokenizer/index.js';
import { ApiError, badParam, decodePng, type RgbImage } from '../util/index.js';

/** Most pixels one request's image may have (a 4096 x 4096 PNG); bounds what a client makes the server allocate. */
export const MAX_IMAGE_PIXELS = 4096 * 4096;

/** The content of a message given as parts: text joined, each image at an `IMAGE_PLACEHOLDER`. */
export function contentOfParts(parts: unknown[], param: string): { content: string; images: RgbImage[] } {
  let content = '';
  const images: RgbImage[] = [];
  parts.forEach((p, j) => {
    const part = p as { type?: unknown; text?: unknown; image_url?: unknown } | null;
    if (part && typeof part === 'object' && part.type === 'text' && typeof part.text === 'string') {
      content += part.text;
    } else if (part && typeof part === 'object' && part.type === 'image_url') {
      images.push(imageOfPart(part.image_url, `${param}[${j}].image_url`));
      content += IMAGE_PLACEHOLDER;
    } else {
      throw badParam(
        `${param}[${j}]`,
        p,
        'Give text parts ({"type": "text", "text": ...}) or image parts ({"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}).',
      );
    }
  });
  return { content, images };
}

/** The image of an `image_url` field (`{url, detail?}` or the bare URL string some clients send). */
function imageOfPart(field: unknown, param: string): RgbImage {
  const url = typeof field === 'string' ? field : (field as { url?: unknown } | null)?.url;
  if (typeof url !== 'string') throw badParam(param, field, 'Give {"url": "data:image/png;base64,..."}.');
  const m = /^data:([^;,]*)(;base64)?,/i.exec(url);
  if (!m) {
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1] ?? 'no scheme';
    throw new ApiError(
      400,
      `Image URLs are not fetched by this server (got a ${scheme} URL): it reaches nothing outside itself. Send the image inline as a data: URL, e.g. "data:image/png;base64,<base64 PNG>".`,
      'invalid_request_error',
      `${param}.url`,
      'image_url_not_fetched',
    );
  }
  const mime = m[1]!.toLowerCase();
  if (mime !== 'image/png')
    throw new ApiError(
      400,
      `The image is ${mime === '' ? 'of no stated type' : mime}; this server decodes PNG only (no image library). Re-encode it as PNG and send "data:image/png;base64,...".`,
      'invalid_request_error',
      `${param}.url`,
      'unsupported_image_format',
    );
  if (!m[2]) throw badParam(`${param}.url`, url, 'A PNG data: URL must be base64: "data:image/png;base64,...".');
  try {
    return decodePng(Buffer.from(url.slice(m[0].length), 'base64'), MAX_IMAGE_PIXELS);
  } catch (err) {
    throw new ApiError(
      400,
      `The image is not a PNG this server reads: ${(err as Error).message}`,
      'invalid_request_error',
      `${param}.url`,
      'invalid_image',
    );
  }
}
