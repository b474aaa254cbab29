// Everything a checkpoint carries besides the weights, in one place: each piece of trainer state (KL coefficient,
// early stop, early warnings, metric logger, collapse EMA, validation results) is registered here once, and a
// checkpoint saves them together and a resume restores them together; no piece saves or restores itself.
import type { RagenConfig } from '../config/index.js';
import type { TrainableEngine } from '../engine/index.js';
import type { RunPaths } from '../metrics/index.js';
import { writeCheckpoint } from './checkpoint-io.js';
import { optimizerRoles } from './optimizer-state.js';

/** One piece of checkpointed state: its plain-JSON value now, and how to put a saved one back. */
export interface StatePiece<T> {
  get(): T;
  set(saved: T): void;
}

/** The run's checkpointed trainer state: the registered pieces, serialised once. */
export class RunState {
  private readonly pieces = new Map<string, StatePiece<unknown>>();

  /** Register `piece` under `key` (the key it has in checkpoint.json's `trainer` object). */
  register<T>(key: string, piece: StatePiece<T>): this {
    if (this.pieces.has(key)) throw new Error(`RunState: \`${key}\` is registered twice.`);
    this.pieces.set(key, piece as StatePiece<unknown>);
    return this;
  }

  /** Every piece's value, in registration order (plain JSON). */
  save(): Record<string, unknown> {
    return Object.fromEntries([...this.pieces].map(([key, p]) => [key, p.get()]));
  }

  /**
   * Put back each registered piece that `saved` holds; a piece a checkpoint of an older version lacks keeps its fresh
   * value, and keys no piece claims (the checkpoint's `optimizerRoles`) are left to whoever reads them.
   */
  restore(saved: Record<string, unknown>): void {
    for (const [key, p] of this.pieces) if (saved[key] !== undefined && saved[key] !== null) p.set(saved[key]);
  }
}

/**
 * Write checkpoint `step`: the engine's weights (and optimizer state with `trainer.saveOptimizer`), then the state.
 * The roles whose optimizer state the engine wrote are recorded beside it (`optimizerRoles`), and a resume requires
 * each of them (a role without state yet, e.g. the policy during critic warm-up, is not required).
 */
export async function saveCheckpoint(
  state: RunState,
  o: { step: number; engine: TrainableEngine; config: RagenConfig; paths: RunPaths },
): Promise<void> {
  const t = o.config.trainer;
  const trainer: Record<string, unknown> = state.save();
  const writeModel = async (dir: string) => {
    await o.engine.save(dir, { optimizer: t.saveOptimizer, maxShardBytes: t.checkpointShardBytes });
    if (t.saveOptimizer) trainer.optimizerRoles = optimizerRoles(dir);
  };
  const trainSeedCounter = o.step * o.config.env.train.reduce((n, e) => n + e.groups, 0);
  await writeCheckpoint(
    o.paths.checkpoints,
    { step: o.step, data: { trainSeedCounter }, trainer },
    { config: o.config, writeModel, metricsFile: o.paths.metrics, keep: t.keepCheckpoints },
  );
}
