import { describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.js';

describe('ragen bench engine', () => {
  it('is listed under bench and rejects an unknown backend with the valid names', async () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await main(['bench', 'engine', '--backend', 'cuda', '--no-torch'])).toBe(2);
      expect(err.mock.calls.flat().join('\n')).toMatch(/unknown backend `cuda`; valid: native, wasm, js/);
      expect(await main(['bench', 'engine', '--steps', '0'])).not.toBe(0);
    } finally {
      err.mockRestore();
      out.mockRestore();
    }
  });
});
