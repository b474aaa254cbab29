// A Qwen2.5-VL's vision special tokens: which ids they are, and where a token row may hold them. The processor writes
// each image as `<|vision_start|>`, its `<|image_pad|>` run, `<|vision_end|>`; the policy never samples any of them
// (suppress.ts), so a vision token anywhere else came from outside the engine's sampler.
import { ConfigError } from '../util/index.js';
import type { VLConfig } from './qwen2-vl-config.js';

/** What the vision-token checks read of a VL config: its vision token ids and the vocabulary's size. */
export type VisionTokenIds = Pick<
  VLConfig,
  'visionStartTokenId' | 'visionEndTokenId' | 'visionPadTokenId' | 'imageTokenId' | 'videoTokenId'
> & { text: { vocabSize: number } };

/**
 * The vision token ids of a Qwen2.5-VL or Qwen3-VL config.json (its `*_token_id` keys; the vocabulary's size from
 * `text_config` or the top level). Qwen3-VL's names no `vision_token_id`: its `<|vision_pad|>` is Qwen's 151654.
 */
export function visionTokenIdsFromHF(json: Record<string, unknown>, source: string): VisionTokenIds {
  const text = (json.text_config ?? json) as Record<string, unknown>;
  const id = (key: string, fallback?: number): number => {
    const v = json[key] ?? text[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      throw new ConfigError(`${source}: ${key} must be a token id (an integer >= 0), got ${JSON.stringify(v)}`);
    return v;
  };
  return {
    visionStartTokenId: id('vision_start_token_id'),
    visionEndTokenId: id('vision_end_token_id'),
    visionPadTokenId: id('vision_token_id', QWEN_VISION_PAD),
    imageTokenId: id('image_token_id'),
    videoTokenId: id('video_token_id'),
    text: { vocabSize: id('vocab_size') },
  };
}

/** `<|vision_pad|>` in Qwen's 151k vocabulary. */
const QWEN_VISION_PAD = 151654;

/**
 * The vision special tokens of a VL config (`<|vision_start|>`, `<|vision_end|>`, `<|vision_pad|>`, `<|image_pad|>`,
 * `<|video_pad|>`; config.json's `*_token_id`) by id, those inside the vocabulary.
 */
export function visionTokens(c: VisionTokenIds): Map<number, string> {
  const named: [number, string][] = [
    [c.visionStartTokenId, '<|vision_start|>'],
    [c.visionEndTokenId, '<|vision_end|>'],
    [c.visionPadTokenId, '<|vision_pad|>'],
    [c.imageTokenId, '<|image_pad|>'],
    [c.videoTokenId, '<|video_pad|>'],
  ];
  return new Map(named.filter(([id]) => id >= 0 && id < c.text.vocabSize));
}

/** A vision token outside an image's run: where, which. */
export interface StrayVisionToken {
  position: number;
  id: number;
  name: string;
}

/**
 * The first vision token of `ids` that is not part of an image's `<|vision_start|>`, one or more `<|image_pad|>`,
 * `<|vision_end|>` run (a sampled `<|image_pad|>`, a lone `<|vision_end|>`, any `<|video_pad|>` or `<|vision_pad|>`),
 * or null when every one is.
 */
export function strayVisionToken(ids: ArrayLike<number>, c: VisionTokenIds): StrayVisionToken | null {
  const names = visionTokens(c);
  const stray = (position: number): StrayVisionToken => ({
    position,
    id: ids[position]!,
    name: names.get(ids[position]!)!,
  });
  let open = -1; // position of the run's <|vision_start|>, -1 outside a run
  let pads = 0;
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t]!;
    if (open < 0) {
      if (id === c.visionStartTokenId) {
        open = t;
        pads = 0;
      } else if (names.has(id)) return stray(t);
    } else if (id === c.imageTokenId) pads++;
    else if (id === c.visionEndTokenId && pads > 0) open = -1;
    else return stray(names.has(id) ? t : open);
  }
  return open >= 0 ? stray(open) : null;
}

/**
 * Throws naming `what` (e.g. "Row 3 of the batch"), the token and its position when `ids` holds a vision token outside
 * an image's run: a VLM's engines never sample one, so such a row was not sampled by them (a chat API's reply, a
 * recorded call, hand-made data), and its teacher-forced pass would read the token as part of an image.
 */
export function refuseStrayVisionToken(ids: ArrayLike<number>, c: VisionTokenIds, what: string): void {
  const s = strayVisionToken(ids, c);
  if (!s) return;
  throw new ConfigError(
    `${what} holds ${s.name} (id ${s.id}) at position ${s.position} outside an image's <|vision_start|><|image_pad|>...<|vision_end|> run. A vision-language model's engines never sample vision tokens (they are suppressed), so these ids did not come from the engine's sampler (a chat API's reply, a recorded call, hand-made data): drop that sample, or remove the token from its completion.`,
  );
}
