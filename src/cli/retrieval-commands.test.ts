import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, test } from 'vitest';
import { runCli } from './testing.js';

describe('ragen bench retrieval', () => {
  test('--json reports recall@k by question type over the requested questions', async () => {
    const { code, out } = await runCli('bench', 'retrieval', '--limit', '60', '--json');
    expect(code).toBe(0);
    const report = JSON.parse(out);
    expect(report).toMatchObject({ k: 5, mode: 'val', retriever: expect.stringContaining('bm25') });
    expect(report.rows.all.questions).toBe(60);
    expect(report.rows.single.questions + report.rows.bridge.questions + report.rows.comparison.questions).toBe(60);
    expect(report.rows.single.recall).toBeGreaterThanOrEqual(0.9);
    for (const row of Object.values(report.rows) as { recall: number; allGold: number }[])
      expect(row.allGold).toBeLessThanOrEqual(row.recall);
  });
  test('a bad --mode or --k is a usage error (exit 2)', async () => {
    expect((await runCli('bench', 'retrieval', '--mode', 'test')).code).toBe(2);
    expect((await runCli('bench', 'retrieval', '--k', '99')).code).toBe(2);
  });
});

describe('ragen retrieval serve', () => {
  test('serves /health and /retrieve until SIGTERM, then exits 0', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "const m = await import('./src/cli/main.ts'); process.exitCode = await m.main(['retrieval', 'serve', '--port', '0']);",
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL within 30 s; output: ${out}`)), 30_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    try {
      expect(await (await fetch(`${url}/health`)).json()).toMatchObject({
        status: 'healthy',
        passages: expect.any(Number),
      });
      const r = (await (
        await fetch(`${url}/retrieve`, { method: 'POST', body: JSON.stringify({ query: 'river', top_k: 2 }) })
      ).json()) as any;
      expect(r.results).toHaveLength(2);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(0);
  }, 40_000);

  test('a port in use is a usage error naming the port (exit 2)', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = String((blocker.address() as AddressInfo).port);
    try {
      const { code, err } = await runCli('retrieval', 'serve', '--port', port);
      expect(code).toBe(2);
      expect(err).toContain(`Port ${port}`);
    } finally {
      blocker.close();
    }
  });
});
