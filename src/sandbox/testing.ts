// Test helper: whether the sandbox's tests can run. Without bubblewrap they are skipped on a laptop and fail in CI
// (RAGEN_REQUIRE_BACKENDS=1, as for the kernel backends), so a green CI never hides unrun sandbox tests. The unit tier
// (`npm run test:unit`, RAGEN_UNIT_TIER=1) starts no processes, so there they are skipped: `npm test` runs them.
import { backendsRequired } from '../tensor/testing.js';
import { findExecutable } from './bwrap.js';

/**
 * True when bubblewrap is on PATH; false (skip) when not, and in the unit tier; with RAGEN_REQUIRE_BACKENDS=1 a
 * missing one throws.
 */
export function testSandbox(): boolean {
  if (process.env.RAGEN_UNIT_TIER === '1') return false;
  if (findExecutable('bwrap')) return true;
  if (!backendsRequired()) return false;
  throw new Error(
    'RAGEN_REQUIRE_BACKENDS=1 requires bubblewrap for the sandbox tests, and `bwrap` is not on PATH: `apt-get install -y bubblewrap`. Unset RAGEN_REQUIRE_BACKENDS to skip them instead.',
  );
}
