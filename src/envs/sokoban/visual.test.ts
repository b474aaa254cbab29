import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { checkRegisteredEnv, makeEnv, pixelAt, type RgbImage } from '../../env/index.js';
import { ConfigError } from '../../util/index.js';
import { SOKOBAN_COLOURS, VisualSokobanEnv } from './visual.js';

// A hand-built 6x6 room (default vocabulary): player (2, 1), box (2, 2), target (2, 3); walls around.
const ROOM = ['######', '#____#', '#PXO_#', '#____#', '#____#', '######'].join('\n');
const centre = (image: RgbImage, r: number, c: number, tile: number) =>
  pixelAt(image, c * tile + tile / 2, r * tile + tile / 2);

describe('VisualSimpleSokoban', () => {
  test('passes checkEnv (image size, byte length, determinism per seed)', async () => {
    await checkRegisteredEnv('VisualSimpleSokoban', { seeds: [0, 1, 7] });
  });

  test('draws each cell kind at its position, at the configured tile size', () => {
    const env = new VisualSokobanEnv({ tileSize: 10 });
    const r = env.reset({ seed: 0, options: { grid: ROOM } });
    const image = r.images![0]!;
    expect([image.width, image.height, image.data.length]).toEqual([60, 60, 60 * 60 * 3]);
    expect(centre(image, 0, 0, 10)).toEqual(SOKOBAN_COLOURS.wall);
    expect(centre(image, 1, 1, 10)).toEqual(SOKOBAN_COLOURS.floor);
    expect(centre(image, 2, 1, 10)).toEqual(SOKOBAN_COLOURS.player);
    expect(centre(image, 2, 2, 10)).toEqual(SOKOBAN_COLOURS.box);
    expect(centre(image, 2, 3, 10)).toEqual(SOKOBAN_COLOURS.target);
    expect(pixelAt(image, 31, 21)).toEqual(SOKOBAN_COLOURS.floor); // the target is a dot: the cell's corner is floor
    expect(pixelAt(image, 21, 21)).toEqual(SOKOBAN_COLOURS.box); // the box fills its cell but for a thin inset
    expect(pixelAt(image, 20, 20)).toEqual(SOKOBAN_COLOURS.floor);
    expect(r.observation).toBe(env.render());
    expect(r.observation).toContain('PXO');

    const pushed = env.step('Right');
    const after = pushed.images![0]!;
    expect(pushed.terminated).toBe(true);
    expect(centre(after, 2, 1, 10)).toEqual(SOKOBAN_COLOURS.floor);
    expect(centre(after, 2, 2, 10)).toEqual(SOKOBAN_COLOURS.player);
    expect(pixelAt(after, 31, 21)).toEqual(SOKOBAN_COLOURS.boxOnTarget);
  });

  test('the same seed draws the same image; another seed another room', () => {
    const a = new VisualSokobanEnv().reset({ seed: 3 }).images![0]!;
    const b = new VisualSokobanEnv().reset({ seed: 3 }).images![0]!;
    const c = new VisualSokobanEnv().reset({ seed: 4 }).images![0]!;
    expect(Buffer.from(a.data).equals(Buffer.from(b.data))).toBe(true);
    expect(Buffer.from(a.data).equals(Buffer.from(c.data))).toBe(false);
  });

  test("the text twin's solver wins through the visual env, on every seed tried", () => {
    for (let seed = 0; seed < 20; seed++) {
      const env = makeEnv('VisualSimpleSokoban', { tileSize: 8 }) as VisualSokobanEnv;
      env.reset({ seed });
      const plan = env.solution()!;
      let last;
      for (const action of plan) last = env.step(action);
      expect(last?.info.success, `seed ${seed}`).toBe(true);
      expect(last?.images?.[0]?.width).toBe(48);
    }
  });

  test("observation 'image' sends a fixed sentence, so only the image carries the state", () => {
    const env = new VisualSokobanEnv({ observation: 'image' });
    const a = env.reset({ seed: 0 });
    const b = env.reset({ seed: 1 });
    expect(a.observation).toBe(b.observation);
    expect(a.observation).not.toContain('#');
    expect(env.observationSpace).toEqual({ text: false, image: { width: 96, height: 96 } });
  });

  test('a hand-built room of another size than dimRoom is a ConfigError naming the fix', () => {
    const env = new VisualSokobanEnv({ dimRoom: [7, 6] });
    expect(() => env.reset({ seed: 0, options: { grid: ROOM } })).toThrow(ConfigError);
    expect(() => env.reset({ seed: 0, options: { grid: ROOM } })).toThrow(/room is 6x6 but dimRoom is \[7, 6\]/);
  });

  test('a bad tile size or observation mode is a ConfigError naming the key', () => {
    expect(() => makeEnv('VisualSimpleSokoban', { tileSize: 2 })).toThrow(/tileSize/);
    expect(() => new VisualSokobanEnv({ observation: 'pixels' as never })).toThrow(/`observation`/);
  });
});
