// Setup file of the unit tier (vitest.unit.config.ts): installs ./unit-tier.ts's rule once per worker process and fails
// the test during which a process start or a server listen was refused, even if the code under test caught the error.
import { afterEach, expect } from 'vitest';
import { forbidProcessesAndServers } from './unit-tier.js';

const KEY = Symbol.for('ragen.unitTier.refused');
const shared = globalThis as { [KEY]?: string[] };
if (!shared[KEY]) forbidProcessesAndServers((shared[KEY] = []));
const refused = shared[KEY];

afterEach(() => {
  const seen = refused.splice(0);
  expect(seen, `the unit tier refused ${seen.join('; ')}`).toEqual([]);
});
