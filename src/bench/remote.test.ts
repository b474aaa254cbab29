// The remote load test counts what the server really answered, opens every session, and measures the baseline.
import { describe, expect, it } from 'vitest';
import '../envs/index.js';
import { EnvServer } from '../env/remote/index.js';
import { benchRemote } from './remote.js';

describe('benchRemote', () => {
  it('opens every session, and its step count is the number of steps the server answered', async () => {
    const server = new EnvServer({ envIds: ['SimpleSokoban'], port: 0, log: () => {} });
    const url = `ws://127.0.0.1:${await server.listen()}`;
    try {
      const r = await benchRemote({ id: 'SimpleSokoban', url, sessions: 40, seconds: 0.3, serverPid: process.pid });
      expect(server.stats.sessionsOpened).toBe(40);
      expect(r.errors).toBe(0);
      expect(r.steps).toBeGreaterThan(0);
      expect(r.steps).toBe(server.stats.steps);
      expect(r.resets).toBe(server.stats.resets - 40); // the 40 opening resets are not timed
      expect(r.stepsPerSecond).toBeCloseTo(r.steps / r.seconds, 6);
      expect(r.inProcessStepsPerSecond).toBeGreaterThan(0);
      expect(r.p99Ms).toBeGreaterThanOrEqual(r.p50Ms);
      if (process.platform === 'linux') expect(r.serverCpuSeconds).toBeGreaterThan(0); // read from /proc
    } finally {
      await server.close();
    }
  });
});
