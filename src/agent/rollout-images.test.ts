// A rollout with a vision-language policy: each turn's prompt shows the observation image as its vision tokens and the
// engine receives that image with the prompt; a text policy's prompts on the same env stay text-only.
import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import type { Generation, SamplingParams } from '../engine/index.js';
import { imageGrid, loadQwenTokenizer, QWEN25_VL_PROCESSOR } from '../tokenizer/index.js';
import type { RgbImage } from '../util/index.js';
import { collate } from './collate.js';
import { agentConfig } from './config.js';
import { EnvGroups } from './env-groups.js';
import { enginePolicy } from './policies.js';
import { rollout } from './rollout.js';
import { ScriptedEngine } from './testing.js';

const tok = loadQwenTokenizer();
const PAD = tok.tokenToId('<|image_pad|>')!;

/** A scripted engine that says it reads images (Qwen2.5-VL's processor) and keeps the images each call carried. */
class SeeingEngine extends ScriptedEngine {
  readonly vision = QWEN25_VL_PROCESSOR;
  images: (readonly (readonly RgbImage[] | undefined)[] | undefined)[] = [];
  override async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    this.images.push(params.images);
    return super.generate(prompts, params);
  }
}

async function run(engine: ScriptedEngine, contextWindowMode: 'single_turn' | 'full' = 'single_turn') {
  const cfg = agentConfig({ maxTurns: 2, contextWindowMode });
  const groups = new EnvGroups({
    tags: [{ env: 'VisualFrozenLake', nGroups: 1, config: { size: 4, tileSize: 14 } }],
    groupSize: 2,
    mode: 'val',
    seed: 7,
  });
  return rollout({ groups, policy: enginePolicy(engine, tok, cfg, { seed: 1 }), tokenizer: tok, agent: cfg });
}

describe('rollout with a vision-language policy', () => {
  it("puts each turn's image in its prompt as (56 / 28)^2 image_pad tokens and hands the engine its 56 x 56 image", async () => {
    const engine = new SeeingEngine(tok, () => 'look</think><answer>Right</answer><|im_end|>');
    await run(engine);
    const per = imageGrid(56, 56).tokens;
    expect(per).toBe(4);
    expect(engine.calls.length).toBeGreaterThan(0);
    engine.calls.forEach((call, c) => {
      const images = engine.images[c]!;
      expect(images).toHaveLength(call.prompts.length);
      call.prompts.forEach((p, i) => {
        expect(p.filter((id) => id === PAD)).toHaveLength(per); // single_turn: this turn's image only
        expect(images[i]!.map((im) => [im.width, im.height])).toEqual([[56, 56]]);
      });
    });
  });

  it("gives each training sample every turn's images in order, one per vision run, none of their tokens trained", async () => {
    const START = tok.tokenToId('<|vision_start|>')!;
    for (const mode of ['full', 'single_turn'] as const) {
      const engine = new SeeingEngine(tok, () => 'look</think><answer>Right</answer><|im_end|>');
      const { samples, episodes } = await run(engine, mode);
      expect(samples.length).toBeGreaterThan(0);
      for (const s of samples) {
        const turns = episodes[s.episode]!.turns;
        const shown =
          mode === 'full' ? turns.slice(0, Math.max(...s.turns) + 1) : turns.slice(s.turns[0]!, s.turns[0]! + 1);
        expect(s.images, `${mode}: the turns' own images, in order`).toEqual(
          shown.flatMap((t) => t.loop!.images ?? []),
        );
        expect(s.ids.filter((id) => id === START)).toHaveLength(s.images!.length);
        s.ids.forEach((id, t) => {
          if (id === PAD) expect(s.lossMask[t], `${mode}: image token ${t} is never trained`).toBe(0);
        });
      }
      if (mode === 'full') expect(samples.some((s) => s.images!.length === 2)).toBe(true);
      // each turn records the images its prompt showed (what the engine got with it), for passes that re-score prompts
      engine.calls.forEach((call, c) =>
        call.prompts.forEach((p, i) => {
          const turn = episodes.flatMap((e) => e.turns).find((t) => t.promptIds.join() === p.join())!;
          expect(turn.promptImages).toEqual(engine.images[c]![i]);
        }),
      );
      const batch = collate(samples, 0);
      expect(batch.images).toEqual(samples.map((s) => s.images));
    }
  });

  it('a text policy on the same env gets text-only prompts and no images', async () => {
    const engine = new ScriptedEngine(tok, () => 'look</think><answer>Right</answer><|im_end|>');
    await run(engine);
    const { samples } = await run(engine);
    expect(samples.every((s) => s.images === undefined)).toBe(true);
    expect(collate(samples, 0).images).toBeUndefined();
    for (const call of engine.calls) {
      expect(call.params.images).toBeUndefined();
      for (const p of call.prompts) expect(p).not.toContain(PAD);
    }
  });
});
