import '../envs/index.js'; // the built-in environments
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { loadConfig } from './load.js';

const dir = mkdtempSync(join(tmpdir(), 'ragen-yaml-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe('config YAML that cannot mean a config gets a sentence, not a stack or a `null`', () => {
  it.each([
    ['trainer.actorLr=1e400', /`trainer.actorLr=1e400`: the value reads as Infinity; config numbers must be finite/],
    ['trainer.actorLr=.nan', /the value reads as NaN/],
    ['trainer.steps=-.inf', /the value reads as -Infinity/],
    ['env.train=[{tag: Bandit, groups: .nan}]', /`0\.groups` reads as NaN/],
    ['trainer.earlyStop=&a {x: *a}', /`x` is an alias inside its own YAML anchor/],
  ])('override %s', (override, message) => {
    expect(() => loadConfig({ overrides: [override] })).toThrow(ConfigError);
    expect(() => loadConfig({ overrides: [override] })).toThrow(message);
  });

  it('a file whose anchor holds an alias to itself names the file and the key', () => {
    const f = file('anchor.yaml', 'trainer: &t\n  steps: 3\n  self: *t\n');
    expect(() => loadConfig({ config: f })).toThrow(
      /`[^`]*anchor\.yaml`: `trainer\.self` is an alias inside its own YAML anchor/,
    );
  });

  it('a file with a non-finite number names the file and the key', () => {
    const f = file('inf.yaml', 'trainer:\n  actorLr: 1e400\n');
    expect(() => loadConfig({ config: f })).toThrow(/`[^`]*inf\.yaml`: `trainer\.actorLr` reads as Infinity/);
  });

  it('`extends` of a missing file names the file that holds the `extends`', () => {
    const f = file('child.yaml', 'extends: nope.yaml\ntrainer:\n  steps: 3\n');
    expect(() => loadConfig({ config: f })).toThrow(
      /`extends: nope\.yaml` in `[^`]*child\.yaml`: Config `nope\.yaml` is neither a file nor a preset/,
    );
  });
});
