// Per-role optimiser of the local engine: non-finite check, global-norm clipping, AdamW; and its state saved as
// safetensors in Hugging Face's layout (`optimizer/<role>.safetensors`, or its shards + `<role>.safetensors.index.json`
// past the shard size: `m.<param>`, `v.<param>`, step in every file's metadata).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AdamW, clipGradNorm, gradNorm, gradsAreFinite, type Tensor } from '../tensor/index.js';
import { expectWeight, loadWeightFiles, saveWeights, type WeightMap } from '../model/index.js';
import { CheckpointError } from '../util/index.js';
import type { OptimizerSettings, OptimizerStepResult, TrainableRole } from './types.js';

export class RoleOptimizer {
  private adam: AdamW | null = null;
  /** State loaded before the first step: applied when AdamW is built with the trainer's settings. */
  private pending: { step: number; m: Float32Array[]; v: Float32Array[] } | null = null;
  private readonly params: Tensor[];

  constructor(
    readonly role: TrainableRole,
    readonly named: [string, Tensor][],
  ) {
    this.params = named.map(([, t]) => t);
  }

  /**
   * Skip on NaN/Inf gradients, clip to `maxGradNorm`, AdamW update (betas/eps/decay fixed at the first step), zero
   * grads.
   */
  step(s: OptimizerSettings): OptimizerStepResult {
    const norm = gradNorm(this.params);
    // A NaN or an infinity makes the sum of squares one, so a finite norm proves every gradient finite: the element
    // check (a second pass over every gradient) runs only when the norm is not (or finite squares overflowed).
    if (!Number.isFinite(norm) && !gradsAreFinite(this.params)) {
      this.zeroGrad();
      return { gradNorm: norm, skipped: true };
    }
    if (s.maxGradNorm && s.maxGradNorm > 0) clipGradNorm(this.params, s.maxGradNorm, norm);
    const adam = this.ensure(s);
    adam.lr = s.lr;
    adam.step();
    this.zeroGrad();
    return { gradNorm: norm, skipped: false };
  }

  zeroGrad(): void {
    for (const p of this.params) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  /** Moments by parameter name, or null before the first step. */
  exportState(): { step: number; weights: WeightMap } | null {
    if (!this.adam) return null;
    const st = this.adam.getState();
    const weights: WeightMap = new Map();
    this.named.forEach(([name, t], i) => {
      weights.set(`m.${name}`, { shape: [...t.shape], data: st.m[i]! });
      weights.set(`v.${name}`, { shape: [...t.shape], data: st.v[i]! });
    });
    return { step: st.step, weights };
  }

  importState(step: number, weights: WeightMap, source: string): void {
    const m = this.named.map(([name, t]) => expectWeight(weights, `m.${name}`, t.shape, source).data);
    const v = this.named.map(([name, t]) => expectWeight(weights, `v.${name}`, t.shape, source).data);
    if (this.adam) this.adam.setState({ step, m, v });
    else this.pending = { step, m, v };
  }

  dispose(): void {
    this.adam?.dispose();
  }

  private ensure(s: OptimizerSettings): AdamW {
    if (!this.adam) {
      this.adam = new AdamW(this.params, {
        lr: s.lr,
        weightDecay: s.weightDecay ?? 0.01,
        betas: s.betas ?? [0.9, 0.999],
        eps: s.eps ?? 1e-8,
      });
      if (this.pending) this.adam.setState(this.pending);
      this.pending = null;
    }
    return this.adam;
  }
}

/** Write each role's optimiser state into `dir/optimizer/`, sharded past `maxShardBytes` (see `saveWeights`). */
export async function saveOptimizerStates(
  dir: string,
  optimizers: ReadonlyMap<TrainableRole, RoleOptimizer>,
  maxShardBytes?: number,
): Promise<void> {
  await mkdir(join(dir, 'optimizer'), { recursive: true }); // present even before the first step: load checks for it
  for (const [role, opt] of optimizers) {
    const st = opt.exportState();
    if (!st) continue;
    await saveWeights(join(dir, 'optimizer'), st.weights, {
      file: `${role}.safetensors`,
      metadata: { step: String(st.step) },
      ...(maxShardBytes === undefined ? {} : { maxShardBytes }),
    });
  }
}

/** Restore the states `saveOptimizerStates` wrote (roles without a file keep a fresh optimiser). */
export async function loadOptimizerStates(dir: string, get: (role: TrainableRole) => RoleOptimizer): Promise<void> {
  const folder = join(dir, 'optimizer');
  if (!existsSync(folder))
    throw new CheckpointError(`no optimizer state in ${dir} (expected ${folder}/); save with {optimizer: true}`);
  for (const role of ['policy', 'critic'] as const) {
    const file = `${role}.safetensors`;
    if (!existsSync(join(folder, file)) && !existsSync(join(folder, `${file}.index.json`))) continue;
    const { weights, metadata, path } = await loadWeightFiles(folder, file);
    get(role).importState(Number(metadata.step ?? 0), weights, path);
  }
}
