import '../envs/index.js'; // the built-in environments
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCS_FILE, renderConfigDocs } from '../../scripts/gen-config-docs.js';
import { CONFIG_ALIASES } from './aliases.js';
import { ConfigSchema } from './schema.js';
import { RAGEN_KEYS } from './ragen-keys.js';
import { allKeys } from './schema-walk.js';

describe('docs/config.md', () => {
  it('is what scripts/gen-config-docs.ts generates (run it after changing the schema)', () => {
    expect(readFileSync(DOCS_FILE, 'utf8')).toBe(renderConfigDocs());
  });

  it('lists every leaf key of the schema', () => {
    const text = readFileSync(DOCS_FILE, 'utf8');
    const leaves = allKeys(ConfigSchema).filter((k) => !allKeys(ConfigSchema).some((o) => o.startsWith(`${k}.`)));
    for (const k of leaves) expect(text).toContain(`| \`${k}\` |`);
  });
});

describe('RAGEN key map', () => {
  const keys = new Set([...allKeys(ConfigSchema), ...CONFIG_ALIASES.map((a) => a.key)]);
  it.each(RAGEN_KEYS.filter((k) => k.ours !== null))('$ragen maps to an existing key', (k) => {
    expect(keys.has(k.ours!)).toBe(true);
  });

  it('covers the keys of the inventory section 4 table', () => {
    const ragen = RAGEN_KEYS.map((k) => k.ragen);
    for (const k of [
      'actor_rollout_ref.rollout.rollout_filter_value',
      'algorithm.adv_estimator',
      'actor_rollout_ref.actor.clip_ratio_low',
      'es_manager.train.env_groups',
      'agent_proxy.max_turn',
      'trainer.total_training_steps',
    ]) {
      expect(ragen).toContain(k);
    }
  });
});
