import '../envs/index.js'; // the built-in environments
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../util/index.js';
import { loadConfig, loadSavedConfig } from './load.js';
import { migrateSavedConfig } from './migrate.js';

const quiet = () => vi.spyOn(process.stderr, 'write').mockImplementation(() => true);

describe('saved configs from before the config redesign', () => {
  it('a run directory config.yaml written by b06e21c resumes as the same config, and says what it renamed', () => {
    const err = quiet();
    // The resolved config `ragen train trainer.steps=8 trainer.valBeforeTrain=false trainer.valEvery=0 ...` saved then.
    const old = loadSavedConfig(join(import.meta.dirname, 'fixtures', 'saved-before-issue-13.yaml'));
    const lines = err.mock.calls.map((c) => String(c[0])).join('');
    err.mockRestore();
    // The presets now name the model `ragen-tiny`; the saved `models/ragen-tiny` still finds it
    // (src/model/hub.test.ts).
    const today = loadConfig({
      config: 'sokoban-ppo',
      overrides: [
        'model.path=models/ragen-tiny',
        'trainer.steps=8',
        'trainer.valBeforeTrain=false',
        'trainer.valEvery=0',
        'logging.runDir=/tmp/run-base8',
        'logging.console=none',
      ],
    });
    expect(old).toEqual(today);
    for (const change of [
      'generation.maxNewTokens -> agent.maxNewTokens',
      'agent.contextMode -> agent.contextWindowMode',
      'algo.dualClipC -> algo.clipRatioC',
      'model.dtype dropped',
    ])
      expect(lines).toContain(change);
  });

  it('maps rewardMode to useTurnScores and window to maxContextWindow', () => {
    const m = migrateSavedConfig(
      { agent: { rewardMode: 'turn', window: 2, contextMode: 'limited_multi_turn' } },
      'x.yaml',
    );
    expect(m.data).toEqual({
      agent: { useTurnScores: true, maxContextWindow: 2, contextWindowMode: 'limited_multi_turn' },
    });
    expect(migrateSavedConfig({ agent: { rewardMode: 'episode' } }, 'x.yaml').data).toEqual({
      agent: { useTurnScores: false },
    });
    expect(() => migrateSavedConfig({ agent: { rewardMode: 'step' } }, 'x.yaml')).toThrow(/agent.rewardMode.*"step"/);
  });

  it('keeps a removed key whose value did something, so the schema refuses it by name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-migrate-'));
    writeFileSync(join(dir, 'config.yaml'), 'model:\n  dtype: bfloat16\n');
    expect(() => loadSavedConfig(dir)).toThrow(ConfigError);
    expect(() => loadSavedConfig(dir)).toThrow(/model\.dtype/);
    expect(() => migrateSavedConfig({ generation: { maxNewTokens: 8 }, agent: { maxNewTokens: 9 } }, 'x.yaml')).toThrow(
      /both the old key `generation.maxNewTokens` and its new name/,
    );
  });
});
