import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Markdown imported as its text, as the dashboard's build does (esbuild's text loader; dashboard-ui/src/guide.ts).
  plugins: [
    {
      name: 'markdown-as-text',
      transform: (code, id) => (id.endsWith('.md') ? `export default ${JSON.stringify(code)};` : null),
    },
  ],
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one file per core less one: a single file at a time on CI's two cores. Much of the suite
    // waits on children (torch workers, CLI runs, servers), so two files at once there: 14.6 -> 10.3 minutes.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
