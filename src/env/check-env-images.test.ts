import { describe, expect, test } from 'vitest';
import { ResetNeededError } from '../util/index.js';
import { checkEnv, EnvCheckError } from './check-env.js';
import type { Env, ObservationSpace, ResetResult, RgbImage, StepResult } from './core.js';
import { invalidInfo } from './core.js';
import { blankImage, fillDisc, fillRect, pixelAt } from './image.js';

/** A counter drawn as an image (n red pixels in a 4x2 image); flaws switched on one by one. */
class PictureCounter implements Env {
  readonly instruction = 'Count.';
  readonly legend = '';
  readonly actionNames = ['Up', 'Stop'];
  readonly observationSpace: ObservationSpace | undefined = { text: true, image: { width: 4, height: 2 } };
  private n = 0;
  private done = true;
  private draws = 0;
  constructor(private flaw = 'none') {
    if (flaw === 'undeclared') this.observationSpace = undefined;
  }
  reset({ seed }: { seed: number }): ResetResult {
    this.n = seed % 3;
    this.done = false;
    return { observation: this.render(), images: this.images(), info: this.info(true) };
  }
  step(action: string): StepResult {
    if (this.done) throw new ResetNeededError('reset first');
    if (action !== 'Up' && action !== 'Stop') {
      const images = this.flaw === 'invalid-redraws' ? [blankImage(4, 2, [0, 0, 255])] : this.images();
      return {
        observation: this.render(),
        images,
        reward: 0,
        terminated: false,
        truncated: false,
        info: invalidInfo('no'),
      };
    }
    if (action === 'Up') this.n++;
    this.done = action === 'Stop' || this.n >= 5;
    return {
      observation: this.render(),
      images: this.images(),
      reward: 1,
      terminated: this.done,
      truncated: false,
      info: this.info(true),
    };
  }
  render(): string {
    return String(this.n);
  }
  close(): void {}
  private info(valid: boolean) {
    return { success: this.n >= 5, actionIsValid: valid, actionIsEffective: valid };
  }
  private images(): RgbImage[] {
    this.draws++;
    const w = this.flaw === 'wrong-size' ? 3 : 4;
    const image = blankImage(w, 2, [0, 0, 0]);
    for (let i = 0; i < this.n && i < 8; i++) fillRect(image, i % 4, i >> 2, 1, 1, [255, 0, 0]);
    if (this.flaw === 'short-data') image.data = image.data.subarray(1);
    if (this.flaw === 'noisy') image.data[0] = this.draws & 255;
    if (this.flaw === 'none-sent') return [];
    return [image];
  }
}

async function problems(flaw: string): Promise<string> {
  try {
    await checkEnv(new PictureCounter(flaw), { solve: () => ['Up', 'Stop'] });
  } catch (err) {
    expect(err).toBeInstanceOf(EnvCheckError);
    return (err as EnvCheckError).problems.join('\n');
  }
  return '';
}

describe('checkEnv on image observations', () => {
  test('a well-formed image env passes', async () => {
    expect(await problems('none')).toBe('');
  });
  test('an image of another size than declared is reported', async () => {
    expect(await problems('wrong-size')).toMatch(/the image is 3x2, not the declared 4x2/);
  });
  test('image data of the wrong byte length is reported', async () => {
    expect(await problems('short-data')).toMatch(/has 23 bytes, not width \* height \* 3 = 24/);
  });
  test('a declared image that is missing is reported', async () => {
    expect(await problems('none-sent')).toMatch(/carries 0 images, not the 1 its observationSpace declares/);
  });
  test('images from an env that declares none are reported', async () => {
    expect(await problems('undeclared')).toMatch(/carries images but the env declares no observationSpace image/);
  });
  test('images that differ for the same seed and actions are reported (compared by content)', async () => {
    expect(await problems('noisy')).toMatch(/the same seed and actions gave a different trajectory/);
  });
  test('an invalid action that changes the image is reported', async () => {
    expect(await problems('invalid-redraws')).toMatch(/the invalid action .* changed the image/);
  });
});

describe('the drawing helpers', () => {
  test('fillRect clips to the image and fillDisc paints only within its radius', () => {
    const image = blankImage(10, 10, [1, 2, 3]);
    fillRect(image, 8, 8, 5, 5, [9, 9, 9]);
    expect(pixelAt(image, 9, 9)).toEqual([9, 9, 9]);
    expect(pixelAt(image, 7, 9)).toEqual([1, 2, 3]);
    fillDisc(image, 5, 5, 2, [200, 0, 0]);
    expect(pixelAt(image, 5, 5)).toEqual([200, 0, 0]);
    expect(pixelAt(image, 4, 4)).toEqual([200, 0, 0]);
    expect(pixelAt(image, 2, 5)).toEqual([1, 2, 3]);
    expect(pixelAt(image, 3, 3)).toEqual([1, 2, 3]); // corner of the disc's box: outside the radius
  });
});
