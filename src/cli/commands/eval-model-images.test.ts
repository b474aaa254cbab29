// `ragen eval --policy model` with a Qwen2.5-VL directory (`ragen model init --shape qwen2.5-vl-tiny`) on a visual
// env: the eval reads the VLM's text config for its position checks, and the local engine samples each turn with the
// observation's image, the prompt holding that image's vision tokens.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import '../../envs/index.js';
import { makeEnv } from '../../env/index.js';
import { LocalEngine } from '../../engine/index.js';
import { loadTokenizer } from '../../tokenizer/index.js';
import type { RgbImage } from '../../util/index.js';
import { runCli as run } from '../testing.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-eval-vl-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('ragen eval --policy model with a vision-language model', () => {
  test('plays a visual env with each turn image reaching the engine', async () => {
    const dir = join(tmp, 'vl');
    const init = await run('model', 'init', '--shape', 'qwen2.5-vl-tiny', '--out', dir);
    expect(init.code, init.err).toBe(0);
    // what the engine is asked: record every generate call's prompts and images, then sample as usual
    const calls: {
      prompts: number[][];
      images: readonly (readonly RgbImage[] | undefined)[] | undefined;
      vision: boolean;
    }[] = [];
    const generate = LocalEngine.prototype.generate;
    LocalEngine.prototype.generate = function (this: LocalEngine, prompts, params) {
      calls.push({ prompts: prompts.map((p) => [...p]), images: params.images, vision: this.vision !== undefined });
      return generate.call(this, prompts, params);
    };
    let r;
    try {
      r = await run(
        'eval',
        '--env',
        'VisualFrozenLake',
        '--policy',
        'model',
        '--model',
        dir,
        '--groups',
        '1',
        '--max-turns',
        '2',
        '--set',
        'maxNewTokens=6',
        '--json',
        '--out',
        join(tmp, 'out.jsonl'),
      );
    } finally {
      LocalEngine.prototype.generate = generate;
    }
    expect(r.code, r.err).toBe(0);
    const [episode] = readFileSync(join(tmp, 'out.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seed: number; turns: unknown[] });
    expect(calls.length).toBe(episode!.turns.length);
    const env = makeEnv('VisualFrozenLake');
    const first = (await env.reset({ seed: episode!.seed, mode: 'val' })).images![0]!;
    const tok = loadTokenizer(dir);
    const pad = tok.encode('<|image_pad|>')[0]!;
    calls.forEach((call, turn) => {
      expect(call.vision).toBe(true);
      // turn t's prompt holds t + 1 observations, each with its image
      expect(call.images).toHaveLength(1);
      expect(call.images![0]).toHaveLength(turn + 1);
      // a 64 x 64 image resizes to 56 x 56: 4 x 4 patches, 2 x 2 after the merge, so 4 <|image_pad|> per image
      expect(call.prompts[0]!.filter((id) => id === pad)).toHaveLength(4 * (turn + 1));
    });
    expect(calls[0]!.images![0]![0]).toEqual(first);
  }, 120_000);
});
