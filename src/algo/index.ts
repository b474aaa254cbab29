// algo: StarPO's mathematics as pure functions over plain numeric arrays (no model, no engine).
//
// Batch layout, used everywhere: a padded (B, T) batch stored flat, row-major — element (b, t) of a
// per-token array (logprobs, values, rewards, advantages, mask) is at index b*T + t — with an explicit
// loss mask (non-zero = a policy token that is trained on; prompt, observation and padding tokens are
// 0). Per-sequence arrays have length B; group ids / episode ids are one key (number or string) per
// sequence. Inputs are any ArrayLike<number> (Float32Array, Float64Array, number[]); outputs are
// Float64Array. Losses return {loss, grad, stats} with the exact gradient of `loss` w.r.t. the
// per-token log-probs (and values / entropies), and take the mini-batch's `AggNorm` so that summing
// micro-batch losses and gradients reproduces the mini-batch's exactly. See docs/algorithms.md.
export {
  seqLengths,
  seqMeanTokens,
  seqSums,
  broadcastOverMask,
  type Nums,
  type TokenMask,
  type TokenShape,
} from './shape.js';
export * from './aggregate.js';
export * from './gae.js';
export * from './outcome-advantage.js';
export * from './advantages.js';
export * from './advantage-modifiers.js';
export * from './reward-norm.js';
export * from './kl.js';
export * from './policy-loss.js';
export * from './value-loss.js';
export * from './filter.js';
export * from './collapse.js';
export * from './early-warning.js';
export * from './grad-buckets.js';
export * from './importance.js';
export * from './policy-loss-variants.js';
export * from './rollout-correction.js';
export * from './mismatch.js';
export * from './distill.js';
