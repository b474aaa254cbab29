// Inference copies of the projection weights, fused for fewer, wider GEMMs while sampling: q|k|v in one
// (HD + 2KD, C) matrix, gate|up in one (2F, C), with any LoRA adapters merged in (W + alpha/r B A).
import { affine, matmul, noGrad, Tensor } from '../tensor/index.js';
import { FusedWeights } from './fused-weights.js';
import type { Proj, Transformer } from './transformer.js';

export { FusedWeights, type FusedLayer } from './fused-weights.js';

/** Stack the effective weights of `projs` (rows in order) into one new (sum out, in) matrix. */
function stack(model: Transformer, projs: Proj[], part: 'weight' | 'bias'): Tensor {
  const at0 = (p: Proj): Tensor => {
    const t = p[part]!;
    if (!(t instanceof Tensor))
      throw new Error(`fuseWeights: ${p.name} is a bf16 frozen matrix, which has no fused form`);
    return t;
  };
  const first = at0(projs[0]!);
  const be = first.backend;
  const cols = part === 'weight' ? first.shape[1]! : 1;
  const rows = projs.reduce((n, p) => n + at0(p).shape[0]!, 0);
  const out = Tensor.empty(part === 'weight' ? [rows, cols] : [rows], be);
  let at = 0;
  for (const p of projs) {
    const src = at0(p);
    const r = src.shape[0]!;
    be.copyBlock(src.buf, 0, cols, out.buf, at * cols, cols, r, cols, false);
    const ad = part === 'weight' ? model.lora?.adapters.get(p.name) : undefined;
    if (ad) {
      const ba = matmul(ad.B, ad.A); // (out, in)
      const delta = affine(ba, model.lora!.scaling);
      be.copyBlock(delta.buf, 0, cols, out.buf, at * cols, cols, r, cols, true);
      ba.dispose();
      delta.dispose();
    }
    at += r;
  }
  return out;
}

/** Build the fused inference weights of `model` (no graph; the model is not changed). */
export function fuseWeights(model: Transformer): FusedWeights {
  return noGrad(
    () =>
      new FusedWeights(
        model.layerProjections().map((l) => ({
          qkv: stack(model, [l.q, l.k, l.v], 'weight'),
          qkvBias: l.q.bias ? stack(model, [l.q, l.k, l.v], 'bias') : null,
          o: stack(model, [l.o], 'weight'),
          oBias: l.o.bias ? stack(model, [l.o], 'bias') : null,
          gateUp: stack(model, [l.gate, l.up], 'weight'),
          down: stack(model, [l.down], 'weight'),
        })),
      ),
  );
}
