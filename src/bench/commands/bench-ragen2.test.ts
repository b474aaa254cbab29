// `ragen bench ragen2`'s report from run directories (--report-only): summary.json, summary.md and the three PNG
// figures land in the out folder; bad --seeds are usage errors that say what was given.
import '../../envs/index.js'; // the built-in environments
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../util/index.js';
import { chromiumPath } from '../study/index.js';
import { parseSeeds, ragen2Report } from './bench-ragen2.js';

describe('ragen bench ragen2', () => {
  it('parses --seeds and refuses anything but integers', () => {
    expect(parseSeeds('10000, 20000')).toEqual([10000, 20000]);
    expect(parseSeeds(undefined)).toEqual([10000, 20000, 30000]);
    expect(() => parseSeeds('10000,abc')).toThrow(UsageError);
    expect(() => parseSeeds('10000,abc')).toThrow(/`10000,abc`/);
  });

  it.skipIf(!existsSync(chromiumPath()))(
    'writes the summary and the figures from the run directories',
    async () => {
      const runs = mkdtempSync(join(tmpdir(), 'ragen2-cli-'));
      const dir = join(runs, 'ppo-topp0.9__seed5');
      mkdirSync(dir);
      writeFileSync(join(dir, 'config.yaml'), 'trainer:\n  steps: 10\n');
      writeFileSync(
        join(dir, 'metrics.jsonl'),
        [
          { step: 0, 'val/success': 0.2 },
          { step: 1, 'collapse/mi_estimate': 0.5, 'collapse/conditional_entropy': 0.1 },
          { step: 10, 'val/success': 0.4, 'collapse/mi_estimate': 0.6, 'collapse/conditional_entropy': 0.09 },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n') + '\n',
      );
      const out = join(runs, 'report');
      const md = await ragen2Report(runs, out, 0.1, ['ppo-topp0.9'], 'ragen bench ragen2 --report-only');
      expect(md).toContain('| ppo-topp0.9 | 5 | finished | 10/10 | 20.0% | 40.0% |');
      expect(readFileSync(join(out, 'summary.md'), 'utf8')).toBe(`${md}\n`);
      expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).configs[0].after.mean).toBe(0.4);
      for (const f of ['success.png', 'collapse.png', 'regimes.png'])
        expect(readFileSync(join(out, f)).subarray(1, 4).toString()).toBe('PNG');
    },
    60_000,
  );
});
