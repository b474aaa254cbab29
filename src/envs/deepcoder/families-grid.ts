// Grid problem families in the stdin style: shortest paths in a maze and counting islands, each with a
// TypeScript oracle (BFS / flood fill) and a Python reference solution.
import type { Rng } from '../../util/index.js';
import { dedent, type Family, type TestCase } from './problem.js';

/** A random grid of `open` / `wall` cells. */
function grid(rng: Rng, r: number, c: number, wall: string, density: number): string[][] {
  return Array.from({ length: r }, () => Array.from({ length: c }, () => (rng.random() < density ? wall : '.')));
}

export const gridPath: Family = {
  id: 'grid-path',
  tier: 'hard',
  style: 'stdin',
  make(rng) {
    const wall = rng.choice(['#', 'X', '*']);
    const king = rng.random() < 0.4;
    const steps = king
      ? [-1, 0, 1].flatMap((dr) => [-1, 0, 1].map((dc) => [dr, dc] as const)).filter(([a, b]) => a !== 0 || b !== 0)
      : ([
          [1, 0],
          [-1, 0],
          [0, 1],
          [0, -1],
        ] as const);
    const cases: TestCase[] = [];
    for (let k = 0; k < 10; k++) {
      const r = rng.intBetween(2, 8);
      const c = rng.intBetween(2, 8);
      const g = grid(rng, r, c, wall, k === 0 ? 0 : 0.3);
      const cells = rng.shuffle(Array.from({ length: r * c }, (_, i) => i)).slice(0, 2) as [number, number];
      g[Math.floor(cells[0] / c)]![cells[0] % c] = 'S';
      g[Math.floor(cells[1] / c)]![cells[1] % c] = 'T';
      const dist = new Map<number, number>([[cells[0], 0]]);
      const queue = [cells[0]];
      for (let q = 0; q < queue.length; q++) {
        const cur = queue[q]!;
        const [y, x] = [Math.floor(cur / c), cur % c];
        for (const [dy, dx] of steps) {
          const ny = y + dy;
          const nx = x + dx;
          if (ny < 0 || nx < 0 || ny >= r || nx >= c || g[ny]![nx] === wall || dist.has(ny * c + nx)) continue;
          dist.set(ny * c + nx, dist.get(cur)! + 1);
          queue.push(ny * c + nx);
        }
      }
      cases.push({
        input: `${r} ${c}\n${g.map((row) => row.join('')).join('\n')}\n`,
        output: `${dist.get(cells[1]) ?? -1}\n`,
      });
    }
    return {
      title: `Shortest path ${king ? 'with diagonal moves' : 'in a maze'}`,
      statement: `A grid has free cells '.', walls '${wall}', a start 'S' and a target 'T'. In one move you go to ${king ? 'any of the 8 neighbouring cells (sides and corners)' : 'a cell sharing a side with yours'}, never onto a wall or off the grid. Print the fewest moves from S to T, or -1 if T cannot be reached.\n\nInput: R and C (2 <= R, C <= 8), then R lines of C characters.\nOutput: one integer.`,
      tests: cases,
      reference: dedent(`
        from collections import deque
        r, c = map(int, input().split())
        g = [input().strip() for _ in range(r)]
        start = next((i, j) for i in range(r) for j in range(c) if g[i][j] == 'S')
        moves = ${king ? '[(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1) if a or b]' : '[(1, 0), (-1, 0), (0, 1), (0, -1)]'}
        dist = {start: 0}
        q = deque([start])
        answer = -1
        while q:
            y, x = q.popleft()
            if g[y][x] == 'T':
                answer = dist[(y, x)]
                break
            for dy, dx in moves:
                ny, nx = y + dy, x + dx
                if 0 <= ny < r and 0 <= nx < c and g[ny][nx] != '${wall}' and (ny, nx) not in dist:
                    dist[(ny, nx)] = dist[(y, x)] + 1
                    q.append((ny, nx))
        print(answer)
      `),
    };
  },
};

export const islands: Family = {
  id: 'islands',
  tier: 'medium',
  style: 'stdin',
  make(rng) {
    const land = rng.choice(['#', 'L', 'o']);
    const eight = rng.random() < 0.4;
    const cases: TestCase[] = [];
    for (let k = 0; k < 10; k++) {
      const r = rng.intBetween(1, 9);
      const c = rng.intBetween(1, 9);
      const g = grid(rng, r, c, land, k === 0 ? 0 : 0.45);
      const seen = new Set<number>();
      let count = 0;
      for (let s = 0; s < r * c; s++) {
        if (g[Math.floor(s / c)]![s % c] !== land || seen.has(s)) continue;
        count++;
        const stack = [s];
        seen.add(s);
        while (stack.length) {
          const cur = stack.pop()!;
          const [y, x] = [Math.floor(cur / c), cur % c];
          for (let dy = -1; dy <= 1; dy++) {
            for (let dx = -1; dx <= 1; dx++) {
              if ((dy === 0 && dx === 0) || (!eight && dy !== 0 && dx !== 0)) continue;
              const ny = y + dy;
              const nx = x + dx;
              if (ny < 0 || nx < 0 || ny >= r || nx >= c || g[ny]![nx] !== land || seen.has(ny * c + nx)) continue;
              seen.add(ny * c + nx);
              stack.push(ny * c + nx);
            }
          }
        }
      }
      cases.push({ input: `${r} ${c}\n${g.map((row) => row.join('')).join('\n')}\n`, output: `${count}\n` });
    }
    return {
      title: `Count the islands (${eight ? '8' : '4'}-connected)`,
      statement: `A map has water '.' and land '${land}'. Land cells that touch ${eight ? 'by a side or a corner' : 'by a side'} belong to the same island. Count the islands.\n\nInput: R and C (1 <= R, C <= 9), then R lines of C characters.\nOutput: the number of islands.`,
      tests: cases,
      reference: dedent(`
        r, c = map(int, input().split())
        g = [input().strip() for _ in range(r)]
        seen = set()
        count = 0
        for i in range(r):
            for j in range(c):
                if g[i][j] != '${land}' or (i, j) in seen:
                    continue
                count += 1
                stack = [(i, j)]
                seen.add((i, j))
                while stack:
                    y, x = stack.pop()
                    for dy in (-1, 0, 1):
                        for dx in (-1, 0, 1):
                            if (dy == 0 and dx == 0)${eight ? '' : ' or (dy != 0 and dx != 0)'}:
                                continue
                            ny, nx = y + dy, x + dx
                            if 0 <= ny < r and 0 <= nx < c and g[ny][nx] == '${land}' and (ny, nx) not in seen:
                                seen.add((ny, nx))
                                stack.append((ny, nx))
        print(count)
      `),
    };
  },
};
