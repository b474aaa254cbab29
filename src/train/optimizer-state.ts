// Which roles' AdamW state a checkpoint holds: `optimizer/<role>.safetensors`, or a sharded
// `<role>.safetensors.index.json`
// (the layout both engines write). A resume must find every role that had state when the checkpoint was written.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainableRole } from '../engine/index.js';

const ROLES: readonly TrainableRole[] = ['policy', 'critic'];

/** Whether checkpoint `dir` holds the optimizer state of `role` (a single file, or a shard index). */
export function hasOptimizerState(dir: string, role: TrainableRole): boolean {
  const base = join(dir, 'optimizer', `${role}.safetensors`);
  return existsSync(base) || existsSync(`${base}.index.json`);
}

/** The roles whose optimizer state checkpoint `dir` holds. */
export function optimizerRoles(dir: string): TrainableRole[] {
  return ROLES.filter((r) => hasOptimizerState(dir, r));
}
