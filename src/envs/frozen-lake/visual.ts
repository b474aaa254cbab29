// VisualFrozenLake: the text FrozenLake's rules and solver, with each observation also drawn as an RGB image from
// tiles drawn in code (VAGEN's visual FrozenLake: image only, or grid text and image together).
import type { z } from 'zod';
import { IMAGE_ONLY_TEXT, visualOptions } from '../visual-options.js';
import { ConfigError } from '../../util/index.js';
import {
  blankImage,
  fillDisc,
  fillRect,
  type Env,
  type ObservationSpace,
  type ResetOptions,
  type ResetResult,
  type Rgb,
  type RgbImage,
  type StepResult,
} from '../../env/index.js';
import { FrozenLakeEnv, frozenLakeConfigSchema, type FrozenLakeConfig } from './frozen-lake-env.js';
import { GOAL, HOLE, type LakeMap } from './lake.js';

/** The tile colours (our own palette). */
export const LAKE_COLOURS = {
  ice: [205, 230, 250] as Rgb,
  hole: [20, 40, 110] as Rgb,
  goal: [240, 190, 20] as Rgb,
  player: [210, 40, 40] as Rgb,
};

const IMAGE_LEGEND =
  'In the image: light blue squares are frozen ice, dark blue squares are holes, the yellow square is the goal, and ' +
  'the red disc is you.';

export const visualFrozenLakeConfigSchema = frozenLakeConfigSchema.extend(visualOptions);

export type VisualFrozenLakeConfig = z.infer<typeof visualFrozenLakeConfigSchema>;
export type VisualFrozenLakeConfigInput = z.input<typeof visualFrozenLakeConfigSchema>;

/** The observation space of a visual FrozenLake config: one square image of the lake. */
export function visualFrozenLakeSpace(config: VisualFrozenLakeConfig): ObservationSpace {
  const side = config.size * config.tileSize;
  return { text: config.observation === 'text+image', image: { width: side, height: side } };
}

/** Draws a lake with the player on `player`: one `tile` x `tile` square per cell, a one-pixel ice grid between. */
export function drawLake(map: LakeMap, player: number, tile: number): RgbImage {
  const image = blankImage(map.cols * tile, map.rows * tile, LAKE_COLOURS.ice);
  const inset = Math.max(1, Math.floor(tile / 8));
  for (let i = 0; i < map.tiles.length; i++) {
    const x = (i % map.cols) * tile;
    const y = Math.floor(i / map.cols) * tile;
    const kind = map.tiles[i];
    if (kind === HOLE) fillRect(image, x + inset, y + inset, tile - 2 * inset, tile - 2 * inset, LAKE_COLOURS.hole);
    else if (kind === GOAL)
      fillRect(image, x + inset, y + inset, tile - 2 * inset, tile - 2 * inset, LAKE_COLOURS.goal);
  }
  const px = (player % map.cols) * tile;
  const py = Math.floor(player / map.cols) * tile;
  fillDisc(image, px + tile / 2, py + tile / 2, tile * 0.3, LAKE_COLOURS.player);
  return image;
}

/**
 * Visual FrozenLake: `FrozenLakeEnv`'s lakes, slips, rewards and solver, each observation carrying one RGB image of
 * the lake (`tileSize` pixels per cell) beside the text ('text+image') or beside a fixed sentence ('image'). Images
 * are drawn once per player cell per lake. A hand-built lake (`reset({seed, options: {map}})`) must be `size` x `size`.
 */
export class VisualFrozenLakeEnv implements Env {
  readonly config: VisualFrozenLakeConfig;
  readonly observationSpace: ObservationSpace;
  readonly legend: string;
  private readonly inner: FrozenLakeEnv;
  private images: (RgbImage | undefined)[] = [];

  constructor(config: VisualFrozenLakeConfigInput = {}) {
    const result = visualFrozenLakeConfigSchema.safeParse(config);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new ConfigError(`Bad VisualFrozenLake config: \`${issue.path.join('.')}\`: ${issue.message}.`);
    }
    this.config = result.data;
    const { tileSize: _t, observation: _o, ...text } = this.config;
    this.inner = new FrozenLakeEnv(text satisfies FrozenLakeConfig);
    this.observationSpace = visualFrozenLakeSpace(this.config);
    this.legend = this.observationSpace.text ? `${this.inner.legend}\n${IMAGE_LEGEND}` : IMAGE_LEGEND;
  }

  get instruction(): string {
    return this.inner.instruction;
  }

  get actionNames(): readonly string[] {
    return this.inner.actionNames;
  }

  reset(options: ResetOptions): ResetResult {
    const r = this.inner.reset(options);
    const { map } = this.inner.state();
    const size = this.config.size;
    if (map.rows !== size || map.cols !== size)
      throw new ConfigError(
        `VisualFrozenLake: the map is ${map.rows}x${map.cols} but size is ${size}; set size to the map's side (square maps only) so the image has the declared size.`,
      );
    this.images = new Array(map.tiles.length);
    return { ...r, observation: this.text(r.observation), images: [this.renderImage()] };
  }

  step(action: string): StepResult {
    const r = this.inner.step(action);
    return { ...r, observation: this.text(r.observation), images: [this.renderImage()] };
  }

  /** The state as text (the text twin's observation, whatever `observation` is). */
  render(): string {
    return this.inner.render();
  }

  /** The current image. */
  renderImage(): RgbImage {
    const state = this.inner.state(); // throws ResetNeededError before the first reset
    return (this.images[state.player] ??= drawLake(state.map, state.player, this.config.tileSize));
  }

  close(): void {}

  /** The shortest safe path from the player to the goal (the text twin's solver). */
  solution(): string[] | undefined {
    return this.inner.solution();
  }

  private text(observation: string): string {
    return this.observationSpace.text ? observation : IMAGE_ONLY_TEXT;
  }
}
