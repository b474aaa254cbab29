// Metrics of a rollout batch under the names of src/metrics/names.ts: `train/*` over all episodes, and
// `train/<tag>/<name>` / `val/<tag>/<name>` from the agent loop's per-tag metrics.
import type { RolloutBatch } from '../agent/index.js';
import { trainEnvMetric, valEnvMetric, type MetricValues } from '../metrics/index.js';

const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
const std = (xs: readonly number[]): number => {
  const m = mean(xs);
  return xs.length === 0 ? 0 : Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};

/** `train/success`, `train/reward_mean`... over every episode of the batch, plus `train/<tag>/<name>` per tag. */
export function trainMetrics(batch: RolloutBatch): MetricValues {
  const eps = batch.episodes;
  const turns = eps.flatMap((e) => e.turns);
  const out: MetricValues = {
    'train/success': mean(eps.map((e) => (e.success ? 1 : 0))),
    'train/reward_mean': mean(eps.map((e) => e.score)),
    'train/reward_std': std(eps.map((e) => e.score)),
    'train/num_turns': mean(eps.map((e) => e.turns.length)),
    'train/num_actions': mean(eps.map((e) => e.numActions)),
    'train/action_is_valid': mean(turns.map((t) => (t.loop?.actions.some((a) => a.valid) ? 1 : 0))),
    'train/format_error_rate': mean(
      turns.map((t) => (t.formatError !== undefined || t.loop?.actions.some((a) => !a.skipped && !a.valid) ? 1 : 0)),
    ),
    'train/response_length': mean(eps.map((e) => e.turns.reduce((a, t) => a + t.tokens.length, 0))),
  };
  for (const [tag, m] of Object.entries(batch.metrics))
    for (const [name, v] of Object.entries(m)) out[trainEnvMetric(tag, name)] = v;
  return out;
}

/** `val/<tag>/<name>` per tag and `val/success` (the mean over tags); also the success per tag. */
export function valMetrics(batch: RolloutBatch): { metrics: MetricValues; success: Record<string, number> } {
  const metrics: MetricValues = {};
  const success: Record<string, number> = {};
  for (const [tag, m] of Object.entries(batch.metrics)) {
    for (const [name, v] of Object.entries(m)) metrics[valEnvMetric(tag, name)] = v;
    success[tag] = m.success ?? 0;
  }
  metrics['val/success'] = mean(Object.values(success));
  return { metrics, success };
}

/** Sampled tokens of a batch (for throughput). */
export function generatedTokens(batch: RolloutBatch): number {
  return batch.episodes.reduce((a, e) => a + e.turns.reduce((b, t) => b + t.tokens.length, 0), 0);
}
