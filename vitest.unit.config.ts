// The unit tier, `npm run test:unit`: the pure modules' tests, for the edit-test loop (within a minute on two free
// cores; `npm test` runs everything). The rule: a folder of pure code is in whole, and a test file in it that starts a
// process or a server, or takes seconds, is excluded below with the reason. test/unit-setup.ts enforces the first half:
// there a process start or a server listen fails the test that made it. Files stay isolated, as in `npm test`: sharing
// modules across files (--no-isolate) halves the CPU but lets one file's registered envs and backend reach the next.
import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  plugins: base.plugins,
  test: {
    ...base.test,
    include: [
      'src/algo/**/*.test.ts',
      'src/env/**/*.test.ts',
      'src/envs/**/*.test.ts',
      'src/tensor/**/*.test.ts',
      'src/config/**/*.test.ts',
      'src/agent/**/*.test.ts',
      'src/util/**/*.test.ts',
      'src/metrics/**/*.test.ts',
      // The gateway's request and sample rules; the rest of it is a server and the agent programs it runs.
      'src/gateway/qwen-tools.test.ts',
      'src/gateway/samples.test.ts',
    ],
    exclude: [
      ...configDefaults.exclude,
      // Servers and child processes.
      'src/env/remote/**', // the env transport: servers on loopback, Python servers
      'src/envs/mcp/**', // MCP tool servers over stdio (a child process) and HTTP
      'src/envs/lean/lean.test.ts', // a stand-in Kimina Lean server
      'src/envs/searchqa/searchqa.test.ts', // a retrieval server
      'src/env/layered-wrappers.test.ts', // wrappers over a remote env, on a loopback server
      'src/config/env-wrappers.test.ts', // the same, from the config
      'src/agent/oracle-service.test.ts', // the oracle as an OpenAI-compatible server
      'src/util/http.test.ts', // the shared node:http helpers, against servers on loopback
      'src/util/make-dir.test.ts', // mounts a tmpfs with mount(8)
      'src/metrics/tensorboard-sink.test.ts', // reads the event files back with Python's TensorBoard
      'src/metrics/wandb-sink.test.ts', // the W&B SDK against a stand-in of its API
      // Slow (CPU seconds of the file alone, past vitest's own ~1.6 s; the whole tier takes ~50 s of CPU).
      'src/tensor/kernels.test.ts', // 6.3 s: WASM and native kernels against the reference at up to 200k elements
      'src/agent/rollout.test.ts', // 5.3 s: the rollout loop's token bookkeeping with Qwen's tokenizer and templates
      'src/agent/oracle.test.ts', // 3.3 s: every env's oracle through the whole text loop
      'src/tensor/native-arena.test.ts', // ~8 s: writes 5 GiB of tensors (page faults) to pass the 4 GiB mark
    ],
    env: { RAGEN_UNIT_TIER: '1' }, // tests gated on a process-starting helper (testSandbox) skip themselves
    setupFiles: ['test/unit-setup.ts'],
  },
});
