// issue 38 item 3: every place a user names an env, a preset or a config key answers an unknown name with the nearest
// ones, including a name that is part of several ids (`Sokoban` -> the Sokoban variants), which edit distance misses.
import { describe, expect, it } from 'vitest';
import { didYouMean } from '../util/suggest.js';
import { runCli } from './testing.js';

const SOKOBANS = /Did you mean `CoordSokoban`, `LargerSokoban` or `SimpleSokoban`\?/;

/** Runs `ragen <argv>` and returns its error output, after checking it failed with a usage exit code. */
async function refused(...argv: string[]): Promise<string> {
  const r = await runCli(...argv);
  expect(r.code, `${argv.join(' ')}\n${r.out}`).toBe(2);
  return r.err;
}

describe('issue 38 item 3: did-you-mean on every env, preset and key name', () => {
  it('didYouMean names the ids that contain the name when none is within edit distance', () => {
    expect(didYouMean('Sokoban', ['SimpleSokoban', 'LargerSokoban', 'FrozenLake', 'CoordSokoban'])).toBe(
      ' Did you mean `CoordSokoban`, `LargerSokoban` or `SimpleSokoban`?',
    );
    expect(didYouMean('frozenlak', ['SimpleSokoban', 'FrozenLake'])).toBe(' Did you mean `FrozenLake`?');
    expect(didYouMean('xy', ['SimpleSokoban', 'FrozenLake'])).toBe('');
  });

  it('env ids: eval --env, play, solve, env serve, bench envs --ids, sft --env, train env.train.N.tag', async () => {
    expect(await refused('eval', '--env', 'Sokoban')).toMatch(SOKOBANS);
    expect(await refused('eval', '--env', 'SimpleSokoban', '--config', 'Sokoban.dimRoom=[5,5]')).toMatch(SOKOBANS);
    expect(await refused('play', 'Sokoban')).toMatch(SOKOBANS);
    expect(await refused('solve', 'Sokoban')).toMatch(SOKOBANS);
    expect(await refused('env', 'serve', 'Sokoban')).toMatch(SOKOBANS);
    expect(await refused('bench', 'envs', '--ids', 'Sokoban')).toMatch(SOKOBANS);
    expect(await refused('sft', '--env', 'Sokoban', '--out', '/nonexistent/never')).toMatch(SOKOBANS);
    expect(
      await refused(
        'train',
        'env.train.0.tag=Sokoban',
        'model.path=/nonexistent-model',
        'logging.runDir=/nonexistent/never',
      ),
    ).toMatch(SOKOBANS);
    expect(await refused('eval', '--env', 'FrozenLak')).toMatch(/Did you mean `FrozenLake`\?/);
  });

  it('presets: train --config, eval --preset, sft --preset, bench learning --runs, bench ragen2 --configs', async () => {
    expect(await refused('train', '--print-config', '--config', 'frozenlake')).toMatch(/Did you mean `frozenlake-ppo`/);
    expect(await refused('eval', '--preset', 'sokoban-pp', '--policy', 'oracle')).toMatch(
      /Did you mean `sokoban-ppo`\?/,
    );
    expect(
      await refused('sft', '--env', 'SimpleSokoban', '--preset', 'sokoban-pp', '--out', '/nonexistent/never'),
    ).toMatch(/Did you mean `sokoban-ppo`\?/);
    expect(await refused('bench', 'learning', '--runs', 'sokoban-pp')).toMatch(
      /Unknown --runs entry `sokoban-pp`.*Did you mean `sokoban-ppo`\?/,
    );
    expect(
      await refused(
        'bench',
        'ragen2',
        '--configs',
        'ppo-filtr',
        '--report-only',
        '--runs-dir',
        '/nonexistent/runs',
        '--out-dir',
        '/nonexistent/out',
      ),
    ).toMatch(/Unknown --configs entry `ppo-filtr`.*Did you mean `ppo-nofilter`\?/);
  });

  it('config keys: train overrides, eval --set, eval/play --config env keys', async () => {
    expect(await refused('train', '--print-config', 'trainer.stps=3')).toMatch(/Did you mean `trainer\.steps`\?/);
    expect(await refused('eval', '--env', 'SimpleSokoban', '--set', 'maxTurn=3')).toMatch(/Did you mean `maxTurns`\?/);
    expect(await refused('eval', '--env', 'SimpleSokoban', '--config', 'dimRom=[5,5]')).toMatch(
      /Did you mean `dimRoom`\?/,
    );
    expect(await refused('play', 'SimpleSokoban', '--config', 'dimRom=[5,5]')).toMatch(/Did you mean `dimRoom`\?/);
  });
});
