// The update's micro-batch cut: plain runs of rows without a token budget; with one, exactly the torch worker's own
// chunks (python/ragen_torch/packing.py, padded and packed) on one rank, and one chunk per rank on several.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { torchPythonForTests } from '../engine/torch-testing.js';
import { workerPackageDir } from '../engine/index.js';
import { Rng } from '../util/index.js';
import { microBatches } from './micro-batches.js';

const python = torchPythonForTests();

/** Random row lengths with many ties and a wide spread (1 .. 60 tokens). */
function lengthSets(): number[][] {
  const rng = new Rng(17);
  return Array.from({ length: 40 }, (_, k) =>
    Array.from({ length: 3 + (k % 23) }, () =>
      rng.random() < 0.2 ? 1 + Math.floor(rng.random() * 3) : 1 + Math.floor(rng.random() * 60),
    ),
  );
}

/** The worker's chunks (python/ragen_torch/packing.py `chunks`) of each case's rows. */
function workerChunks(cases: Case[]): number[][][] {
  const script =
    'import json, sys\nfrom ragen_torch.packing import chunks\nprint(json.dumps([list(chunks(c["lengths"], c["rows"], c["budget"], c["packing"])) for c in json.load(sys.stdin)]))';
  const r = spawnSync(python!, ['-c', script], {
    input: JSON.stringify(cases),
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: workerPackageDir() },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as number[][][];
}

type Case = { lengths: number[]; rows: number[]; budget: number; packing: boolean };

/** One rank: every length set, padded and packed, at budgets from 20 to 300 tokens. */
const ONE_RANK: Case[] = lengthSets().flatMap((lengths, k) =>
  [false, true].map((packing) => ({ lengths, rows: lengths.map((_, i) => i), budget: 20 + 7 * k, packing })),
);

/**
 * Three ranks: each rank's share (positions r, r + 3, ... of the rows sent) of every micro-batch, as the worker gets
 * it.
 */
function rankShares(): { shares: Case[]; wide: number } {
  const shares: Case[] = [];
  let wide = 0;
  lengthSets().forEach((lengths, k) => {
    for (const packing of [false, true]) {
      for (const micro of microBatches(
        lengths.map((_, i) => i),
        lengths,
        Infinity,
        { tokens: 30 + 5 * k, packing, ranks: 3 },
      )) {
        const sent = micro.map((i) => lengths[i]!);
        if (sent.length > 3) wide++;
        for (let r = 0; r < Math.min(3, sent.length); r++) {
          const mine = sent.filter((_, i) => i % 3 === r);
          shares.push({ lengths: mine, rows: mine.map((_, i) => i), budget: 30 + 5 * k, packing });
        }
      }
    }
  });
  return { shares, wide };
}

describe('microBatches', () => {
  it('without a token budget: consecutive runs of maxRows rows, in the given order', () => {
    expect(microBatches([5, 3, 9, 0, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2)).toEqual([[5, 3], [9, 0], [1]]);
  });

  it('with one: rows longest first, at most maxRows each, every row exactly once', () => {
    const lengths = [4, 9, 9, 2, 7, 1, 9];
    const cut = microBatches([0, 1, 2, 3, 4, 5, 6], lengths, 2, { tokens: 1000, packing: false, ranks: 1 });
    expect(cut).toEqual([[1, 2], [6, 4], [0, 3], [5]]);
  });

  describe.runIf(python)('against the worker', () => {
    const { shares, wide } = rankShares();
    // One interpreter start (importing torch is most of it) for both tests.
    const theirs = python ? workerChunks([...ONE_RANK, ...shares]) : [];

    it("on one rank, equals the worker's chunks exactly, padded and packed", () => {
      let several = 0;
      ONE_RANK.forEach((c, k) => {
        const ours = microBatches(c.rows, c.lengths, Infinity, { tokens: c.budget, packing: c.packing, ranks: 1 });
        expect(ours, `case ${k}: lengths ${c.lengths}, budget ${c.budget}, packing ${c.packing}`).toEqual(theirs[k]);
        if (ours.length > 1) several++;
      });
      expect(several, 'most cases span several chunks').toBeGreaterThan(ONE_RANK.length / 2);
      // Packing fits more rows per pass where lengths vary: fewer micro-batches over the whole set.
      const count = (packing: boolean) =>
        ONE_RANK.filter((c) => c.packing === packing).reduce(
          (n, c) => n + microBatches(c.rows, c.lengths, Infinity, { tokens: c.budget, packing, ranks: 1 }).length,
          0,
        );
      expect(count(true)).toBeLessThan(count(false));
    });

    it("on three ranks, each rank's share of every micro-batch is one worker chunk", () => {
      expect(wide, 'micro-batches hold several rows per rank').toBeGreaterThan(20);
      expect(theirs.slice(ONE_RANK.length).every((chunks) => chunks.length === 1)).toBe(true);
    });
  });
});
