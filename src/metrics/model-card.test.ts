// The model card's parts that depend on the run: the base model in the front matter only when it is a Hub id, the
// results table from the validation rows up to the pushed step, and the sentence when there are none.
import { describe, expect, it } from 'vitest';
import { modelCard, type ModelCardInput } from './model-card.js';

const base: ModelCardInput = {
  repo: 'me/agent',
  runName: 'run',
  step: 3,
  baseModel: 'ragen-tiny',
  algorithm: 'grpo',
  trainEnvs: ['Bandit', 'SimpleSokoban'],
  configYaml: 'seed: 1\n',
  metrics: [],
  version: '9.9.9',
};

describe('the model card', () => {
  it('names a Hub base model in the front matter, and a local one only in the text', () => {
    expect(modelCard({ ...base, baseModel: 'Qwen/Qwen2.5-0.5B-Instruct' })).toContain(
      'base_model: Qwen/Qwen2.5-0.5B-Instruct\n---',
    );
    expect(modelCard(base)).not.toContain('base_model:');
    expect(modelCard(base)).toContain('from `ragen-tiny`');
  });

  it('shows each env at the first and the last validation up to the pushed step, later ones left out', () => {
    const metrics = [
      { step: 0, 'val/Bandit/success': 0.5, 'val/SimpleSokoban/success': 0.125 },
      { step: 2, 'val/Bandit/success': 0.75 },
      { step: 4, 'val/Bandit/success': 1 },
    ];
    const card = modelCard({ ...base, metrics });
    expect(card).toContain('at step 0 and at step 2:');
    expect(card).toContain('| Bandit | 50.0% | 75.0% |');
    expect(card).toContain('| SimpleSokoban | 12.5% | - |');
    expect(card).not.toContain('100.0%');
  });

  it('says so when the run validated nothing', () => {
    expect(modelCard({ ...base, metrics: [{ step: 1, 'actor/pg_loss': 0 }] })).toContain('validated nothing');
  });
});
