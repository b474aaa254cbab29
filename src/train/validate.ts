// Validation: the fixed `env.val` seeds rolled out with validation sampling (RAGEN's `_validate`), reported as
// `val/<tag>/<name>` and `val/success`. The sampler seed is fixed too, so two validations differ only by the policy.
import { EnvGroups, enginePolicy, rollout, type AgentConfig } from '../agent/index.js';
import type { Engine } from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { envGroupsOptions, samplingOf, type RagenConfig } from '../config/index.js';
import { valMetrics } from './rollout-metrics.js';

/** A validation's outcome. */
export interface Validation {
  metrics: MetricValues;
  /** `val/<tag>/success` per tag. */
  success: Record<string, number>;
  seconds: number;
}

/** Roll out the validation set once; null when `env.val` is empty. */
export async function validate(config: RagenConfig, engine: Engine, tokenizer: Tokenizer, agent: AgentConfig): Promise<Validation | null> {
  if (config.env.val.length === 0) return null;
  const t0 = performance.now();
  const groups = new EnvGroups(envGroupsOptions(config, 'val'));
  try {
    const policy = enginePolicy(engine, tokenizer, agent, samplingOf(config, 'val', config.seed.val));
    const batch = await rollout({ groups, policy, tokenizer, agent });
    const { metrics, success } = valMetrics(batch);
    const seconds = (performance.now() - t0) / 1000;
    metrics['timing_s/val'] = seconds;
    return { metrics, success, seconds };
  } finally {
    await groups.close();
  }
}
