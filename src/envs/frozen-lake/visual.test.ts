import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { checkRegisteredEnv, makeEnv, pixelAt, type RgbImage } from '../../env/index.js';
import { ConfigError } from '../../util/index.js';
import { LAKE_COLOURS, VisualFrozenLakeEnv } from './visual.js';

const MAP = ['SFFF', 'FHFH', 'FFFH', 'HFFG'].join('\n');
const centre = (image: RgbImage, r: number, c: number, tile: number) =>
  pixelAt(image, c * tile + tile / 2, r * tile + tile / 2);

describe('VisualFrozenLake', () => {
  test('passes checkEnv (image size, byte length, determinism per seed)', async () => {
    await checkRegisteredEnv('VisualFrozenLake', { seeds: [0, 1, 7] });
  });

  test('draws each cell kind at its position, at the configured tile size', () => {
    const env = new VisualFrozenLakeEnv({ tileSize: 12, isSlippery: false });
    const r = env.reset({ seed: 0, options: { map: MAP } });
    const image = r.images![0]!;
    expect([image.width, image.height, image.data.length]).toEqual([48, 48, 48 * 48 * 3]);
    expect(centre(image, 0, 0, 12)).toEqual(LAKE_COLOURS.player);
    expect(centre(image, 0, 1, 12)).toEqual(LAKE_COLOURS.ice);
    expect(centre(image, 1, 1, 12)).toEqual(LAKE_COLOURS.hole);
    expect(centre(image, 3, 3, 12)).toEqual(LAKE_COLOURS.goal);
    expect(pixelAt(image, 12, 12)).toEqual(LAKE_COLOURS.ice); // the hole's inset edge
    expect(pixelAt(image, 0, 0)).toEqual(LAKE_COLOURS.ice); // the player is a disc: the cell's corner is ice
    const moved = env.step('Right').images![0]!;
    expect(centre(moved, 0, 0, 12)).toEqual(LAKE_COLOURS.ice);
    expect(centre(moved, 0, 1, 12)).toEqual(LAKE_COLOURS.player);
  });

  test('the same seed draws the same image; another seed another lake', () => {
    const draw = (seed: number) => Buffer.from(new VisualFrozenLakeEnv().reset({ seed }).images![0]!.data);
    expect(draw(5).equals(draw(5))).toBe(true);
    expect(draw(5).equals(draw(6))).toBe(false);
  });

  test("the text twin's solver wins through the visual env when moves cannot slip", () => {
    for (let seed = 0; seed < 20; seed++) {
      const env = makeEnv('VisualFrozenLake', { successRate: 1 }) as VisualFrozenLakeEnv;
      env.reset({ seed });
      let last;
      for (const action of env.solution()!) last = env.step(action);
      expect(last?.info.success, `seed ${seed}`).toBe(true);
      expect(last?.reward).toBe(1);
    }
  });

  test("observation 'image' sends a fixed sentence, so only the image carries the state", () => {
    const env = new VisualFrozenLakeEnv({ observation: 'image', tileSize: 8 });
    const a = env.reset({ seed: 0 });
    expect(a.observation).toBe(env.reset({ seed: 1 }).observation);
    expect(env.observationSpace).toEqual({ text: false, image: { width: 32, height: 32 } });
  });

  test('a hand-built lake of another size than `size` is a ConfigError naming the fix', () => {
    const env = new VisualFrozenLakeEnv({ size: 5 });
    expect(() => env.reset({ seed: 0, options: { map: MAP } })).toThrow(ConfigError);
    expect(() => env.reset({ seed: 0, options: { map: MAP } })).toThrow(/map is 4x4 but size is 5/);
  });
});
