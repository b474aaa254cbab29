// The settings every visual env adds to its text twin's config (tile size, what the observation carries) and the
// sentence an image-only observation shows.
import { z } from 'zod';

/** The observation text when only the image carries the state. */
export const IMAGE_ONLY_TEXT = 'The current state is shown in the image.';

/** Fields a visual env's config schema extends its text twin's with. */
export const visualOptions = {
  /** Side of one cell in pixels. @default 16 */
  tileSize: z.number().int().min(4).max(64).default(16),
  /**
   * 'text+image': the text observation (per observationFormat) and the image; 'image': a fixed sentence and the
   * image, so only the pixels carry the state. @default 'text+image'
   */
  observation: z.enum(['image', 'text+image']).default('text+image'),
};
