import { describe, expect, test } from 'vitest';
import { runCli } from '../../cli/testing.js';
import { testSandbox } from '../../sandbox/testing.js';
import type { SandboxBenchReport } from './bench-sandbox.js';

describe('ragen bench sandbox', () => {
  test.runIf(testSandbox())(
    'judges the first references, all passing, and reports programs/s per isolation',
    async () => {
      const { code, out } = await runCli('bench', 'sandbox', '--problems', '20', '--isolation', 'both', '--json');
      expect(code).toBe(0);
      const report = JSON.parse(out) as SandboxBenchReport;
      expect(report.results.map((r) => r.isolation)).toEqual(['bwrap', 'none']);
      for (const r of report.results) {
        expect(r).toMatchObject({ programs: 20, programsPassed: 20, failures: [] });
        expect(r.tests).toBeGreaterThanOrEqual(160);
        expect(r.programsPerSecond).toBeCloseTo(20 / r.seconds, 6);
      }
    },
    60_000,
  );
  test('a bad --isolation is a usage error', async () => {
    const { code, err } = await runCli('bench', 'sandbox', '--isolation', 'docker');
    expect(code).toBe(2);
    expect(err).toMatch(/Bad --isolation `docker`: give bwrap, none or both/);
  });
});
