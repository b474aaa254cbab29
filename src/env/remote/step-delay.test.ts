// The env server's benchmarking delay (`stepDelayMs`, `ragen env serve --step-delay-ms`): each reset and step waits
// that long, and sessions wait side by side (a timer, as a slow env or a far-away server would), not in turn.
import { afterAll, beforeAll, expect, it } from 'vitest';
import '../../envs/index.js';
import { EnvServer } from './index.js';
import { RawClient } from './testing.js';

const DELAY = 200;
let server: EnvServer;
let port: number;
beforeAll(async () => {
  server = new EnvServer({ envIds: ['SimpleSokoban'], port: 0, stepDelayMs: DELAY, log: () => {} });
  port = await server.listen();
});
afterAll(() => server?.close());

/** Milliseconds `fn` took. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

it('makes each reset and step take at least the delay, and overlaps the delays of concurrent sessions', async () => {
  const clients = await Promise.all([0, 1, 2, 3].map(() => RawClient.open(`ws://127.0.0.1:${port}/SimpleSokoban`)));
  const [one] = clients;
  const reset = await timed(async () =>
    expect((await one!.ask({ type: 'reset', data: { seed: 1 } })).type).toBe('observation'),
  );
  const step = await timed(async () =>
    expect((await one!.ask({ type: 'step', data: { text: 'Up' } })).type).toBe('observation'),
  );
  expect(reset).toBeGreaterThanOrEqual(DELAY - 1);
  expect(step).toBeGreaterThanOrEqual(DELAY - 1);
  // Four sessions resetting at once: about one delay, well under the four a serial wait would take.
  const together = await timed(() => Promise.all(clients.map((c) => c.ask({ type: 'reset', data: { seed: 2 } }))));
  expect(together).toBeGreaterThanOrEqual(DELAY - 1);
  expect(together).toBeLessThan(3 * DELAY);
  for (const c of clients) c.ws.close();
});
