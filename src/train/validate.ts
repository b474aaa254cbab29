// Validation: the fixed `env.val` seeds rolled out with validation sampling (RAGEN's `_validate`), reported as
// `val/<tag>/<name>` and `val/success`. The sampler seed is fixed too, so two validations differ only by the policy.
import { EnvGroups, enginePolicy, rollout, type AgentConfig, type RolloutBatch } from '../agent/index.js';
import type { Engine } from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { agentEntries, envGroupsOptions, samplingOf, tagEntries, type RagenConfig } from '../config/index.js';
import { agentBatches, gatewayMetrics, gatewayRefusals, joinBatches, openGateway } from './agent-source.js';
import { valMetrics } from './rollout-metrics.js';

/** A validation's outcome. */
export interface Validation {
  metrics: MetricValues;
  /** `val/<tag>/success` per tag. */
  success: Record<string, number>;
  seconds: number;
}

/**
 * Roll out the validation set once; null when `env.val` is empty. Agent entries run through a gateway of their own
 * with validation sampling, their groups seeded after the built-in envs' (`seed.val + g`), the same every validation.
 */
export async function validate(
  config: RagenConfig,
  engine: Engine,
  tokenizer: Tokenizer,
  agent: AgentConfig,
  log?: (line: string) => void,
): Promise<Validation | null> {
  const t0 = performance.now();
  const batch = await validationBatch(config, engine, tokenizer, agent, log);
  if (!batch) return null;
  const { metrics, success } = valMetrics(batch);
  const seconds = (performance.now() - t0) / 1000;
  metrics['timing_s/val'] = seconds;
  return { metrics, success, seconds };
}

/**
 * The episodes of one validation (built-in tags, then agent entries, as `validate` runs them); null when `env.val` is
 * empty. When agent episodes fail, `log` gets one line: the first failure (status, exit, stderr tail) and how many
 * more.
 */
export async function validationBatch(
  config: RagenConfig,
  engine: Engine,
  tokenizer: Tokenizer,
  agent: AgentConfig,
  log?: (line: string) => void,
): Promise<RolloutBatch | null> {
  if (config.env.val.length === 0) return null;
  const groups = tagEntries(config, 'val').length > 0 ? new EnvGroups(envGroupsOptions(config, 'val')) : null;
  const gateway = agentEntries(config, 'val').length > 0 ? await openGateway(config, engine, tokenizer, 'val') : null;
  try {
    const batches: RolloutBatch[] = [];
    if (groups) {
      const policy = enginePolicy(engine, tokenizer, agent, samplingOf(config, 'val', config.seed.val));
      batches.push(await rollout({ groups, policy, tokenizer, agent }));
    }
    if (gateway) {
      const plan = {
        seedBase: config.seed.val + (groups?.nGroups ?? 0),
        samplingSeed: config.seed.val,
        idPrefix: 'val',
      }; // ids need only be unique within this gateway
      const failures: string[] = [];
      const agents = await agentBatches(gateway, config, 'val', plan, (line) => failures.push(line));
      batches.push(...agents.batches);
      if (failures.length > 0)
        log?.(
          `validation: ${failures[0]}${failures.length > 1 ? ` (and ${failures.length - 1} more failed episode(s))` : ''}`,
        );
      const refused = gatewayRefusals(gatewayMetrics(agents.outcomes, agents.unauthorized, gateway.toolFormat));
      if (refused) log?.(`validation: ${refused}`);
    }
    return joinBatches(batches);
  } finally {
    await groups?.close();
    await gateway?.close();
  }
}
