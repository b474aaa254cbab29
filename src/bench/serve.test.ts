import { describe, expect, it } from 'vitest';
import { runEngineOnly, runServeLoad } from './serve.js';
import { serveTiny } from '../serve/testing.js';

describe('ragen bench serve (load phase)', () => {
  it('reports requests/s, tokens/s and batches consistent with what the server did', async () => {
    const { server, url, target } = await serveTiny();
    try {
      const r = await runServeLoad(url, 'tiny', { requests: 24, maxTokens: 4, singles: 2 });
      expect(r.requests).toBe(24);
      expect(r.completionTokens).toBeGreaterThanOrEqual(24); // every answer has at least one token
      expect(r.completionTokens).toBeLessThanOrEqual(24 * 4);
      expect(r.tokensPerS).toBeCloseTo(r.completionTokens / r.seconds, 6);
      expect(r.requestsPerS).toBeCloseTo(24 / r.seconds, 6);
      expect(r.batches).toBeGreaterThanOrEqual(1);
      expect(r.meanBatch * r.batches).toBeCloseTo(24, 6); // the /stats counters saw exactly the load's jobs
      expect(r.p99Ms).toBeGreaterThanOrEqual(r.p50Ms);
      const e = await runEngineOnly(target.engine, target.tokenizer, { requests: 8, maxTokens: 4 });
      expect(e.tokensPerS).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });
});
