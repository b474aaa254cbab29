// VisualSimpleSokoban: the text Sokoban's rules and solver, with each observation also drawn as an RGB image from
// tiles drawn in code (VAGEN's visual Sokoban: image only, or grid text and image together).
import type { z } from 'zod';
import { IMAGE_ONLY_TEXT, visualOptions } from '../visual-options.js';
import { ConfigError, ResetNeededError } from '../../util/index.js';
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
import { sokobanConfigSchema, type SokobanConfig } from './config.js';
import { TARGET, WALL, type SokobanRoom } from './room.js';
import { SokobanEnv } from './sokoban-env.js';

/** The tile colours (our own palette). */
export const SOKOBAN_COLOURS = {
  wall: [70, 70, 80] as Rgb,
  floor: [215, 205, 180] as Rgb,
  target: [40, 170, 70] as Rgb,
  box: [165, 105, 45] as Rgb,
  boxOnTarget: [40, 170, 70] as Rgb,
  player: [40, 80, 220] as Rgb,
};

/** What the model is told the image shows. */
const IMAGE_LEGEND =
  'In the image: dark grey squares are walls, beige is floor, a small green dot is a target, a brown square is a box, ' +
  'a green square is a box on a target, and the blue disc is you.';

export const visualSokobanConfigSchema = sokobanConfigSchema.extend(visualOptions);

export type VisualSokobanConfig = z.infer<typeof visualSokobanConfigSchema>;
export type VisualSokobanConfigInput = z.input<typeof visualSokobanConfigSchema>;

/** The observation space of a visual Sokoban config: one image of the room's size. */
export function visualSokobanSpace(config: VisualSokobanConfig): ObservationSpace {
  const [rows, cols] = config.dimRoom;
  return {
    text: config.observation === 'text+image',
    image: { width: cols * config.tileSize, height: rows * config.tileSize },
  };
}

/** Draws a room: one `tile` x `tile` square per visible cell. */
export function drawSokoban(room: SokobanRoom, tile: number): RgbImage {
  const { layout, player, boxes } = room;
  const image = blankImage(layout.cols * tile, layout.rows * tile, SOKOBAN_COLOURS.floor);
  const inset = Math.max(1, Math.floor(tile / 8));
  for (let r = 0; r < layout.rows; r++) {
    for (let c = 0; c < layout.cols; c++) {
      const i = (r + 1) * layout.width + c + 1;
      const s = layout.statics[i]!;
      const x = c * tile;
      const y = r * tile;
      if (s & WALL) fillRect(image, x, y, tile, tile, SOKOBAN_COLOURS.wall);
      else if (s & TARGET) fillDisc(image, x + tile / 2, y + tile / 2, tile / 6, SOKOBAN_COLOURS.target);
    }
  }
  for (const b of boxes) {
    const x = ((b % layout.width) - 1) * tile;
    const y = (Math.floor(b / layout.width) - 1) * tile;
    const colour = layout.statics[b]! & TARGET ? SOKOBAN_COLOURS.boxOnTarget : SOKOBAN_COLOURS.box;
    fillRect(image, x + inset, y + inset, tile - 2 * inset, tile - 2 * inset, colour);
  }
  const px = ((player % layout.width) - 1) * tile;
  const py = (Math.floor(player / layout.width) - 1) * tile;
  fillDisc(image, px + tile / 2, py + tile / 2, tile * 0.35, SOKOBAN_COLOURS.player);
  return image;
}

/**
 * Visual Sokoban: `SokobanEnv`'s rooms, rules, rewards and solver, each observation carrying one RGB image of the
 * room (`tileSize` pixels per cell) beside the text ('text+image') or beside a fixed sentence ('image').
 * The image is redrawn only when the state changes (an invalid action or a no-op returns the same image).
 * A hand-built room (`reset({seed, options: {grid}})`) must have `dimRoom`'s size, so the image has the declared size.
 */
export class VisualSokobanEnv implements Env {
  readonly config: VisualSokobanConfig;
  readonly observationSpace: ObservationSpace;
  readonly legend: string;
  private readonly inner: SokobanEnv;
  private image: RgbImage | undefined;

  constructor(config: VisualSokobanConfigInput = {}) {
    const result = visualSokobanConfigSchema.safeParse(config);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new ConfigError(`Bad VisualSokoban config: \`${issue.path.join('.')}\`: ${issue.message}.`);
    }
    this.config = result.data;
    const { tileSize: _t, observation: _o, ...text } = this.config;
    this.inner = new SokobanEnv(text satisfies SokobanConfig);
    this.observationSpace = visualSokobanSpace(this.config);
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
    const room = this.inner.room();
    const [rows, cols] = this.config.dimRoom;
    if (room.layout.rows !== rows || room.layout.cols !== cols) {
      this.image = undefined;
      throw new ConfigError(
        `VisualSokoban: the room is ${room.layout.rows}x${room.layout.cols} but dimRoom is [${rows}, ${cols}]; set dimRoom to the room's size so the image has the declared size.`,
      );
    }
    this.image = drawSokoban(room, this.config.tileSize);
    return { ...r, observation: this.text(r.observation), images: [this.image] };
  }

  step(action: string): StepResult {
    const r = this.inner.step(action);
    if (r.info.actionIsEffective) this.image = drawSokoban(this.inner.room(), this.config.tileSize);
    return { ...r, observation: this.text(r.observation), images: [this.image!] };
  }

  /** The state as text (the text twin's observation, whatever `observation` is). */
  render(): string {
    return this.inner.render();
  }

  /** The current image. */
  renderImage(): RgbImage {
    if (!this.image) throw new ResetNeededError('VisualSokoban: call reset() before renderImage().');
    return this.image;
  }

  close(): void {}

  /** The optimal action sequence from the current state (the text twin's solver). */
  solution(): string[] | undefined {
    return this.inner.solution();
  }

  private text(observation: string): string {
    return this.observationSpace.text ? observation : IMAGE_ONLY_TEXT;
  }
}
