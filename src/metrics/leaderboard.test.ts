// The leaderboard's numbers from hand-made eval files: Wilson intervals against published values, pass@k over each
// seed's group, tokens per episode, the ranking, and the warnings and errors a user needs.
import { describe, expect, it } from 'vitest';
import { boardHtml, buildBoard, parseEvalFile, wilson } from './leaderboard.js';

/** An eval line (only the fields the board reads, plus one it ignores). */
const line = (env: string, seed: number, group: number, member: number, success: boolean, tokens: number) =>
  JSON.stringify({ env, seed, group, member, success, n_tokens: tokens, turns: [] });

describe('the Wilson interval', () => {
  it('matches the textbook values (Newcombe 1998, table I) and stays inside [0, 1]', () => {
    const close = (got: [number, number], want: [number, number]) => {
      expect(got[0]).toBeCloseTo(want[0], 4);
      expect(got[1]).toBeCloseTo(want[1], 4);
    };
    close(wilson(81, 263), [0.2553, 0.3662]);
    close(wilson(15, 148), [0.0624, 0.1605]);
    close(wilson(0, 20), [0, 0.1611]);
    close(wilson(1, 29), [0.0061, 0.1718]);
    expect(wilson(0, 0)).toEqual([0, 1]);
  });
});

describe('the board', () => {
  const a = [
    line('Sokoban', 1, 0, 0, true, 10),
    line('Sokoban', 1, 0, 1, false, 20),
    line('Sokoban', 2, 1, 0, false, 30),
    line('Sokoban', 2, 1, 1, false, 40),
    line('Bandit', 3, 2, 0, true, 5),
    line('Bandit', 3, 2, 1, true, 7),
  ].join('\n');
  const b = [line('Sokoban', 1, 0, 0, true, 1), line('Sokoban', 1, 0, 1, true, 3)].join('\n');

  it('gives success, pass@k over groups and tokens per episode per env', () => {
    const board = buildBoard([{ name: 'a', source: 'a.jsonl', episodes: parseEvalFile(a, 'a.jsonl') }]);
    expect(board.envs).toEqual(['Bandit', 'Sokoban']);
    const s = board.entries[0]!.cells['Sokoban']!;
    expect(s).toMatchObject({ episodes: 4, success: 0.25, k: 2, passAtK: 0.5, tokens: 25, seeds: [1, 2] });
    expect(board.entries[0]!.cells['Bandit']).toMatchObject({ success: 1, passAtK: 1, tokens: 6 });
    expect(board.entries[0]!.meanSuccess).toBeCloseTo((0.25 + 1) / 2, 12);
  });

  it('ranks complete entries by mean success and puts one missing an env last, flagging seeds that differ', () => {
    const c = [line('Sokoban', 9, 0, 0, true, 1), line('Bandit', 9, 0, 0, false, 1)].join('\n');
    const board = buildBoard([
      { name: 'partial', source: 'b', episodes: parseEvalFile(b, 'b') },
      { name: 'a', source: 'a', episodes: parseEvalFile(a, 'a') },
      { name: 'c', source: 'c', episodes: parseEvalFile(c, 'c') },
    ]);
    expect(board.entries.map((e) => e.name)).toEqual(['a', 'c', 'partial']);
    expect(board.entries[2]!.meanSuccess).toBeNull();
    expect(board.mismatchedSeeds).toEqual(['Bandit', 'Sokoban']);
    const html = boardHtml(board, { title: 'T <&>', generated: 'now' });
    expect(html).toContain('T &#60;&#38;&#62;');
    expect(html).toContain('different seeds for Bandit, Sokoban');
    expect(html).toContain('not evaluated');
  });

  it('refuses a file that is not eval output, naming the line and the field', () => {
    expect(() => parseEvalFile('{"env":"X","seed":1}\n', 'f.jsonl')).toThrow(/f\.jsonl: line 1 .*`group`/);
    expect(() => parseEvalFile('', 'e.jsonl')).toThrow(/e\.jsonl holds no episodes/);
    expect(() => parseEvalFile(`${line('X', 1, 0, 0, true, 1)}\n{oops\n`, 'g.jsonl')).toThrow(/g\.jsonl: line 2/);
  });
});
