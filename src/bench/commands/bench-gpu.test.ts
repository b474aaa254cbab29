import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runCli } from '../../cli/testing.js';
import { torchPythonForTests, wheelPythonForTests } from '../../engine/torch-testing.js';
import { resolveRunShape, type GpuBenchReport } from './bench-gpu.js';

const python = torchPythonForTests();
const wheelPython = wheelPythonForTests(); // current torch with the real transformers (the wheel environment, .venv)
const SMALL = [
  '--shape',
  'tiny',
  '--device',
  'cpu',
  '--trajectories',
  '3',
  '--turns',
  '2',
  '--new-tokens',
  '6',
  '--prompt-tokens',
  '5',
  '--obs-tokens',
  '3',
  '--micro-batch',
  '2',
];

describe('ragen bench gpu', () => {
  test.runIf(python)(
    'runs end to end on the CPU with the tiny shape: counts, FLOPs and the breakdown add up',
    async () => {
      const { code, out, err } = await runCli('bench', 'gpu', ...SMALL, '--peak-tflops', '0.5', '--json');
      expect(code, err).toBe(0);
      const [r] = JSON.parse(out) as GpuBenchReport[];
      // The worker's tiny test shape: V 256, C 64, F 128, 2 layers, 4 heads of 16, 2 kv heads, q/k/v biases, untied
      // head.
      const layer = 64 * 64 + 64 + 2 * (64 * 32 + 32) + 64 * 64 + 3 * 64 * 128 + 2 * 64;
      expect(r!.parameters).toBe(2 * 256 * 64 + 2 * layer + 64);
      expect(r!.decode).toBe('eager');
      expect(r!.rolloutModel).toBe('float32'); // no bf16 rollout copy on a CPU (rolloutCopy auto)
      expect(r!.rollout.tokens).toBe(3 * 2 * 6); // no stop tokens: every turn samples exactly --new-tokens
      expect(r!.rollout.tokensPerSecond).toBeCloseTo(r!.rollout.tokens / r!.rollout.seconds, 6);
      expect(r!.update.updateTokens).toBe(3 * (5 + 2 * (6 + 3)));
      expect(r!.update.updateFlops).toBe(6 * r!.parameters * r!.update.updateTokens);
      expect(r!.update.mfu!).toBeCloseTo(r!.update.updateFlops / r!.update.updateSeconds / 0.5e12, 9);
      const s = r!.step;
      expect(s.totalSeconds).toBeCloseTo(
        s.rolloutSeconds + s.oldLogprobsSeconds + s.refLogprobsSeconds + s.updateSeconds,
        9,
      );
      for (const x of [s.oldLogprobsSeconds, s.refLogprobsSeconds, s.updateSeconds]) expect(x).toBeGreaterThan(0);
      expect(s.peakMemoryBytes).toBeGreaterThanOrEqual(s.rolloutPeakMemoryBytes);
      if (!r!.transformers.available) expect(r!.transformers.note).toBe('transformers not importable: no ratio');
      // transformers runs the first `turns` turns (--transformers-turns), each sampling exactly --new-tokens per row
      else expect(r!.transformers.rolloutTokens).toBe(3 * 6 * r!.transformers.turns);
    },
    180_000,
  );

  test.runIf(python)(
    'prints a human table; no MFU without a known bf16 peak',
    async () => {
      const { code, out } = await runCli('bench', 'gpu', ...SMALL, '--no-transformers');
      expect(code).toBe(0);
      expect(out).toMatch(/random tiny \(0\.1M parameters\) on cpu/);
      expect(out).toMatch(/rollout +[\d,]+ tokens\/s +skipped \(--no-transformers\)/);
      expect(out).toMatch(/MFU - \(no bf16 peak known for cpu; pass --peak-tflops\)/);
      expect(out).toMatch(
        /StarPO step .* rollout [\d.]+ s, old log-probs [\d.]+ s, ref log-probs [\d.]+ s, update [\d.]+ s/,
      );
    },
    180_000,
  );

  test.runIf(python)(
    "with transformers importable (a test double wrapping our decoder): the ratio, and float32 logits equal to the checkpoint's",
    async () => {
      const saved = process.env.PYTHONPATH;
      process.env.PYTHONPATH = join(import.meta.dirname, 'fixtures/fake-transformers');
      try {
        const { code, out, err } = await runCli('bench', 'gpu', ...SMALL, '--transformers-turns', '2', '--json');
        expect(code, err).toBe(0);
        const [r] = JSON.parse(out) as GpuBenchReport[];
        const t = r!.transformers;
        if (!t.available) throw new Error('the transformers double was not picked up');
        expect(t.version).toBe('test-double');
        expect(t.turns).toBe(2);
        expect(t.rolloutTokens).toBe(r!.rollout.tokens);
        expect(t.rolloutSpeedup).toBeCloseTo(r!.rollout.tokensPerSecond / t.tokensPerSecond, 9);
        // The same decoder on the same checkpoint: exactly equal logits, which holds only if ours were taken from the
        // checkpoint's weights (before the update moved them).
        expect(t.logits.float32!.maxAbsDiff).toBe(0);
        expect(t.logits.float32!.maxAbsLogit).toBeGreaterThan(0);
      } finally {
        if (saved === undefined) delete process.env.PYTHONPATH;
        else process.env.PYTHONPATH = saved;
      }
    },
    180_000,
  );

  test.runIf(wheelPython)(
    "with the real transformers (the wheel environment): generate's rollout peer runs, and its float32 logits are ours",
    async () => {
      const saved = process.env.RAGEN_PYTHON;
      process.env.RAGEN_PYTHON = wheelPython!;
      try {
        const { code, out, err } = await runCli('bench', 'gpu', ...SMALL, '--transformers-turns', '1', '--json');
        expect(code, err).toBe(0);
        const [r] = JSON.parse(out) as GpuBenchReport[];
        const t = r!.transformers;
        if (!t.available) throw new Error(`transformers was not used: ${t.note}`);
        expect(t.version).toMatch(/^\d+\.\d+/);
        expect(t.rolloutTokens).toBe(3 * 6); // sampled exactly --new-tokens per row, as ours
        expect(t.tokensPerSecond).toBeGreaterThan(0);
        expect(t.logits.float32!.maxAbsLogit).toBeGreaterThan(0);
        expect(t.logits.float32!.maxAbsDiff).toBeLessThan(1e-5);
        expect(err).not.toMatch(/deprecated/); // the keywords it passes are the current ones
      } finally {
        if (saved === undefined) delete process.env.RAGEN_PYTHON;
        else process.env.RAGEN_PYTHON = saved;
      }
    },
    180_000,
  );

  test.runIf(python)(
    '--transformers-turns 1: transformers runs only the first turn; the ratio compares it with our first turn; progress per turn on stderr, also with --json',
    async () => {
      const saved = process.env.PYTHONPATH;
      process.env.PYTHONPATH = join(import.meta.dirname, 'fixtures/fake-transformers');
      try {
        const { code, out, err } = await runCli('bench', 'gpu', ...SMALL, '--transformers-turns', '1', '--json');
        expect(code, err).toBe(0);
        const [r] = JSON.parse(out) as GpuBenchReport[];
        const t = r!.transformers;
        if (!t.available) throw new Error('the transformers double was not picked up');
        expect(t.turns).toBe(1);
        expect(t.rolloutTokens).toBe(3 * 6); // one turn of 3 trajectories x 6 tokens
        expect(r!.rollout.turns.map((x) => x.tokens)).toEqual([18, 18]);
        const first = r!.rollout.turns[0]!;
        expect(t.oursTokensPerSecondSameTurns).toBeCloseTo(first.tokens / first.seconds, 6);
        expect(t.rolloutSpeedup).toBeCloseTo(t.oursTokensPerSecondSameTurns / t.tokensPerSecond, 9);
        expect(err).toMatch(/rollout turn 1\/2: 18 tokens/);
        expect(err).toMatch(/rollout turn 2\/2: 18 tokens/);
        expect(err).toMatch(/transformers turn 1\/1: 18 tokens/);
        expect(err).not.toMatch(/transformers turn 2/);
      } finally {
        if (saved === undefined) delete process.env.PYTHONPATH;
        else process.env.PYTHONPATH = saved;
      }
    },
    60_000,
  );

  test('named run shapes: ragen is 128 x 5 turns x 400 tokens; flags override their fields', () => {
    const o = {
      shape: 'x',
      device: 'cpu',
      precision: 'auto',
      microBatch: 2,
      tokenBudget: 16384,
      transformers: true,
      seed: 0,
      out: 'x',
    };
    const ragen = resolveRunShape({ ...o, runShape: 'ragen' });
    expect([ragen.trajectories, ragen.turns, ragen.newTokens]).toEqual([128, 5, 400]);
    expect(ragen.transformersTurns).toBeLessThan(ragen.turns); // the ratio costs less than the measurement
    const quick = resolveRunShape({ ...o, runShape: 'quick', turns: 3 });
    expect(quick.turns).toBe(3);
    expect(quick.trajectories * quick.turns * quick.newTokens).toBeLessThan(128 * 5 * 400);
    expect(() => resolveRunShape({ ...o, runShape: 'huge' })).toThrow(
      /Bad --run-shape `huge`: give one of smoke, quick, ragen/,
    );
    expect(() => resolveRunShape({ ...o, runShape: 'quick', transformersTurns: 3 })).toThrow(
      /--transformers-turns 3 is more than --turns 2/,
    );
  });

  test('bad input is a usage error naming it', async () => {
    let r = await runCli('bench', 'gpu', '--shape', 'qwen9');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/Bad --shape `qwen9`: give one or more of tiny, qwen2\.5-0\.5b, qwen2\.5-1\.5b/);
    r = await runCli('bench', 'gpu', '--check', '--shape', 'tiny', '--new-tokens', '4');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /--check runs fixed stages and takes only --out, --stages and --json; drop --shape, --new-tokens\./,
    );
    r = await runCli('bench', 'gpu', '--out', 'x');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--out is the folder of --check's files/);
    r = await runCli('bench', 'gpu', '--stages', 'step');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--stages picks the stages of --check; add --check, or drop --stages\./);
    r = await runCli('bench', 'gpu', '--check', '--stages', 'step,warp');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /Bad --stages `step,warp`: give default, all, or some of versions, bench, rollout, step, lora, decode, train, fsdp/,
    );
    r = await runCli('bench', 'gpu', '--model', '/nonexistent/model');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--model \/nonexistent\/model: no such directory/);
  });

  test.runIf(python)(
    'a directory that is not a checkpoint is a usage error from the worker side',
    async () => {
      const r = await runCli(
        'bench',
        'gpu',
        '--model',
        'src',
        '--device',
        'cpu',
        '--trajectories',
        '1',
        '--turns',
        '1',
        '--new-tokens',
        '1',
      );
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/not a model checkpoint: src\/config\.json is missing/);
    },
    30_000,
  );
});
