import { describe, expect, it } from 'vitest';
import { TINY_VL } from './qwen2-vl-testing.js';
import { refuseStrayVisionToken, strayVisionToken, visionTokens } from './vision-tokens.js';

// The tiny config's ids: 20 <|vision_start|>, 21 <|image_pad|>, 22 <|video_pad|>, 23 <|vision_end|>, 24 <|vision_pad|>.
const run = [20, 21, 21, 23];

describe('vision tokens', () => {
  it("are the config's five ids by name, those past the vocabulary left out", () => {
    expect([...visionTokens(TINY_VL)].sort((a, b) => a[0] - b[0])).toEqual([
      [20, '<|vision_start|>'],
      [21, '<|image_pad|>'],
      [22, '<|video_pad|>'],
      [23, '<|vision_end|>'],
      [24, '<|vision_pad|>'],
    ]);
    expect([...visionTokens({ ...TINY_VL, visionPadTokenId: 151654 }).keys()]).not.toContain(151654);
  });

  it('are all in image runs in rows the processor wrote', () => {
    expect(strayVisionToken([3, ...run, 5, ...run, 6], TINY_VL)).toBeNull();
    expect(strayVisionToken([3, 5, 6], TINY_VL)).toBeNull();
  });

  it('are found outside a run: sampled pads, a lone end, video and vision pads, an open or empty run', () => {
    const cases: [number[], number, number][] = [
      [[3, ...run, 5, 21, 6], 6, 21], // an <|image_pad|> sampled after the run
      [[3, 23, 5], 1, 23],
      [[3, 22], 1, 22],
      [[3, 20, 21, 24, 23], 3, 24], // a vision token inside the run that is not a pad
      [[3, 20, 21, 5, 23], 1, 20], // text inside the run: its start is the stray one
      [[3, 20, 23], 2, 23], // an empty run
      [[3, 20, 21], 1, 20], // a run left open
    ];
    for (const [ids, position, id] of cases)
      expect(strayVisionToken(ids, TINY_VL), JSON.stringify(ids)).toMatchObject({ position, id });
  });

  it('outside a run are refused with the row, the token and its position', () => {
    expect(() => refuseStrayVisionToken([3, ...run, 21], TINY_VL, 'Row 2 of the batch')).toThrow(
      "Row 2 of the batch holds <|image_pad|> (id 21) at position 5 outside an image's",
    );
  });
});
