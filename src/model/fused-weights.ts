// The fused inference weights' container (built by fused.ts from a Transformer); on its own so the transformer can
// name it without importing the builder.
import type { Tensor } from '../tensor/index.js';

/** One layer's fused projections (HF weight layout: (out, in)). */
export interface FusedLayer {
  qkv: Tensor;
  qkvBias: Tensor | null;
  o: Tensor;
  oBias: Tensor | null;
  gateUp: Tensor;
  down: Tensor;
}

/** Fused inference weights of a model; a snapshot: rebuild after the weights change. */
export class FusedWeights {
  constructor(readonly layers: FusedLayer[]) {}

  dispose(): void {
    for (const l of this.layers) for (const t of [l.qkv, l.qkvBias, l.o, l.oBias, l.gateUp, l.down]) t?.dispose();
  }
}
