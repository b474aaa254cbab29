// Sokoban's config: a zod schema with defaults (RAGEN's SokobanEnvConfig, camelCase keys).
import { z } from 'zod';
import { ConfigError } from '../../util/index.js';
import { DEFAULT_VOCAB } from './room.js';

const symbol = (fallback: string, what: string) =>
  z
    .string()
    .refine((s) => [...s].length === 1 && s !== '\n' && s !== '\r', 'must be exactly one character (not a newline)')
    .default(fallback)
    .describe(`Symbol of ${what} @default ${JSON.stringify(fallback)}`);

/** The grid observation's symbols (RAGEN's `grid_vocab`). Keys left out keep their default. */
export const sokobanVocabSchema = z
  .object({
    wall: symbol(DEFAULT_VOCAB.wall, 'a wall'),
    floor: symbol(DEFAULT_VOCAB.floor, 'empty floor'),
    target: symbol(DEFAULT_VOCAB.target, 'an empty target'),
    boxOnTarget: symbol(DEFAULT_VOCAB.boxOnTarget, 'a box on a target'),
    box: symbol(DEFAULT_VOCAB.box, 'a box off target'),
    player: symbol(DEFAULT_VOCAB.player, 'the player'),
    playerOnTarget: symbol(DEFAULT_VOCAB.playerOnTarget, 'the player on a target'),
  })
  .refine((v) => new Set(Object.values(v)).size === 7, 'the seven symbols must all differ');

const side = z.number().int().min(5).max(32); // 4x4 leaves a 2x2 interior where no box can be pulled

export const sokobanConfigSchema = z.object({
  /** [rows, cols] of the room including its border walls (RAGEN `dim_room`). @default [6, 6] */
  dimRoom: z.tuple([side, side]).default([6, 6]),
  /** Boxes (and targets) per room. @default 1 */
  numBoxes: z.number().int().min(1).max(8).default(1),
  /** Steps after which the episode is truncated. @default 100 */
  maxSteps: z.number().int().min(1).default(100),
  /**
   * Most player moves of the generator's reverse play: every room is solvable in at most this many
   * moves (RAGEN `search_depth`, the reverse-play depth). @default 300
   */
  searchDepth: z.number().int().min(1).max(10_000).default(300),
  /** 'grid' (one symbol per cell), 'coord' ((row, column) lists; walls not listed) or both. @default 'grid' */
  observationFormat: z.enum(['grid', 'coord', 'grid_coord']).default('grid'),
  /** Symbols of the grid observation; the legend always shows these. @default RAGEN's # _ O √ X P S */
  gridVocab: sokobanVocabSchema.default(DEFAULT_VOCAB),
});

/** A validated Sokoban config (every key present). */
export type SokobanConfig = z.infer<typeof sokobanConfigSchema>;
/** What a user may pass: any subset of the keys. */
export type SokobanConfigInput = z.input<typeof sokobanConfigSchema>;

/** Validate a config for direct construction (the registry validates its own); errors are `ConfigError`s. */
export function parseSokobanConfig(input: SokobanConfigInput): SokobanConfig {
  const result = sokobanConfigSchema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new ConfigError(`Bad Sokoban config: \`${issue.path.join('.')}\`: ${issue.message}.`);
}
