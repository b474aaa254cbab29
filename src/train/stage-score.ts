// Stage score: per-token numbers of the rows the update trains on: old log-probs (the sampler's when exact, else a
// teacher-forced recompute, RAGEN's way), reference log-probs for a KL term, and the critic's values.
import type { TrainableEngine } from '../engine/index.js';
import { maskedStats, selectRows, takeRows } from './batch.js';
import { tokenStaleness, type OffPolicyInfo } from './off-policy.js';
import { family, seconds, type StageOutput, type StepBatch, type StepSettings } from './step-batch.js';

/**
 * Score rows `b.keptRows` of `b.all`. `b.fullForward` (an entropy filter's forward over every row) is reused instead of
 * a fresh policy forward; `offPolicy` (async rollouts) says which tokens are stale: their old log-probs are recomputed.
 */
export async function scoreStage(
  b: Pick<StepBatch, 'all' | 'keptRows' | 'fullForward'>,
  s: StepSettings['score'],
  engine: Pick<TrainableEngine, 'forward' | 'kind'>,
  offPolicy?: OffPolicyInfo,
): Promise<StageOutput<'tokens' | 'oldLogprobs' | 'refLogprobs' | 'values' | 'staleness'>> {
  const { all, keptRows: rows, fullForward } = b;
  const tokens = rows.length === all.B ? all : selectRows(all, rows);
  const staleness = offPolicy ? tokenStaleness(tokens, offPolicy) : undefined;
  // Stale tokens (async rollouts) were sampled by an older policy: π_old must be the current one, recomputed.
  const stale = staleness !== undefined && staleness.some((x) => x > 0);
  const recompute = stale || (s.recomputeOldLogprobs === 'auto' ? engine.kind !== 'local' : s.recomputeOldLogprobs);
  let metrics = {};
  let oldLogprobs: Float32Array;
  let t0 = performance.now();
  if (fullForward || recompute) {
    const fwd = fullForward
      ? { logprobs: takeRows(fullForward.logprobs, rows, all.T), entropy: takeRows(fullForward.entropy!, rows, all.T) }
      : await engine.forward(tokens, { role: 'policy', entropy: true });
    oldLogprobs = fwd.logprobs;
    metrics = {
      ...family('timing_s', { old_log_prob: seconds(t0) }),
      ...family('actor', { entropy: maskedStats(fwd.entropy!, tokens.lossMask).mean }),
    };
  } else {
    // The sampler's log p(token) at temperature 1 under the weights that sampled it: the policy has not changed
    // since. `actor/entropy` then comes from the actor update's first forward passes.
    oldLogprobs = tokens.oldLogprobs.map((x, i) => (tokens.lossMask[i] ? x : 0));
  }
  let refLogprobs: Float32Array | undefined;
  if (s.reference) {
    t0 = performance.now();
    refLogprobs = (await engine.forward(tokens, { role: 'reference' })).logprobs;
    metrics = { ...metrics, ...family('timing_s', { ref: seconds(t0) }) };
  }
  let values: Float32Array | undefined;
  if (s.critic) {
    t0 = performance.now();
    values = (await engine.forward(tokens, { role: 'critic' })).values!;
    metrics = { ...metrics, ...family('timing_s', { values: seconds(t0) }) };
  }
  return {
    tokens,
    oldLogprobs,
    ...(refLogprobs ? { refLogprobs } : {}),
    ...(values ? { values } : {}),
    ...(staleness ? { staleness } : {}),
    metrics,
  };
}
