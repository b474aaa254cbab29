// Data parallel in the torch worker, launched with torchrun: two gloo ranks on one node, and two "nodes" of one rank
// each (node 1 started with the command the engine prints for it), on the same global batch give the outputs,
// gradients and weights of one rank (each rank takes half the rows; gradients are summed across ranks); a rank that
// dies is reported, and no process outlives the engine. The same with the models sharded by FSDP2 over two CPU ranks
// (RAGEN_TORCH_FSDP=all), where the interpreter's torch can (>= 2.7; Debian's 1.13 cannot, and refuses by name).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, Rng } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { runWorkerPython, torchPythonForTests } from './torch-testing.js';
import type { ForwardResult, OutputGradients } from './types.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');
/** Whether the interpreter's torch runs FSDP2 on CPU ranks (python/ragen_torch/fsdp.py's cpu_supported). */
const fsdpOnCpu =
  python !== null &&
  runWorkerPython(python, [
    '-c',
    'from ragen_torch.fsdp import cpu_supported; print(cpu_supported())',
  ]).stdout.trim() === 'True';

/** Start an engine whose worker sees RAGEN_TORCH_FSDP=`flag` (read once, at its start). */
async function withFsdp(flag: string, start: () => Promise<TorchEngine>): Promise<TorchEngine> {
  const before = process.env.RAGEN_TORCH_FSDP;
  process.env.RAGEN_TORCH_FSDP = flag;
  try {
    return await start();
  } finally {
    if (before === undefined) delete process.env.RAGEN_TORCH_FSDP;
    else process.env.RAGEN_TORCH_FSDP = before;
  }
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const maxAbs = (a: ArrayLike<number>) => maxAbsDiff(a, new Float32Array(a.length));

function grads(out: ForwardResult): OutputGradients {
  const rng = new Rng(8);
  return {
    logprobs: out.logprobs.map(() => rng.random() - 0.5),
    ...(out.values ? { values: out.values.map(() => rng.random() - 0.5) } : {}),
  };
}

function testBatch() {
  const rng = new Rng(4);
  return sequenceBatch(
    Array.from({ length: 5 }, (_, b) => Array.from({ length: 4 + 3 * b }, () => Math.floor(rng.random() * 1000))),
  );
}

/** Backward passes of the test batch for the policy and the critic (`shared`: one pass; `separate`: two). */
async function backwardBoth(e: TorchEngine, critic: 'shared' | 'separate') {
  const batch = testBatch();
  await e.backward(batch, { role: 'policy', values: critic === 'shared' }, grads);
  if (critic === 'separate') await e.backward(batch, { role: 'critic' }, grads);
}

/** Each of `many` (several ranks) gives `one`'s outputs, gradients of both roles (1e-4 relative), optimizer step,
 * weights after it and greedy samples, from the same weights. Leaves every engine one policy step further. */
async function expectSameAsOneRank(
  one: TorchEngine,
  many: TorchEngine[],
  names: string[],
  critic: 'shared' | 'separate',
) {
  const batch = testBatch();
  const roles = ['policy', 'critic'] as const;
  const a = await one.forward(batch, { role: 'policy', entropy: true });
  await backwardBoth(one, critic);
  const settings = { lr: 1e-3, maxGradNorm: 1 };
  const g1 = new Map<string, Map<string, Float32Array>>();
  for (const role of roles) g1.set(role, await one.tensors(role, 'grad'));
  const s1 = await one.optimizerStep('policy', settings);
  const w1 = await one.tensors('policy');
  const prompts = [[1, 2, 3], [40, 41], [7], [9, 10, 11, 12]];
  const greedy = { maxNewTokens: 6, temperature: 0, seed: 0 };
  const samples = (await one.generate(prompts, greedy)).map((g) => g.tokens);
  for (const [k, two] of many.entries()) {
    const what = names[k]!;
    const b = await two.forward(batch, { role: 'policy', entropy: true });
    expect(maxAbsDiff(a.logprobs, b.logprobs), what).toBeLessThan(1e-5);
    expect(maxAbsDiff(a.entropy!, b.entropy!), what).toBeLessThan(1e-5);
    await backwardBoth(two, critic);
    for (const role of roles) {
      const g2 = await two.tensors(role, 'grad');
      expect([...g2.keys()]).toEqual([...g1.get(role)!.keys()]);
      for (const [n, g] of g1.get(role)!)
        expect(maxAbsDiff(g2.get(n)!, g), `${what}: ${n}`).toBeLessThanOrEqual(1e-4 * maxAbs(g) + 1e-8);
      expect(Math.max(...[...g1.get(role)!.values()].map(maxAbs))).toBeGreaterThan(0);
    }
    const s2 = await two.optimizerStep('policy', settings);
    expect(Math.abs(s1.gradNorm - s2.gradNorm), what).toBeLessThan(1e-4 * s1.gradNorm);
    const w2 = await two.tensors('policy');
    for (const [n, w] of w1) expect(maxAbsDiff(w2.get(n)!, w), `${what}: ${n}`).toBeLessThan(0.25 * settings.lr); // see torch.test.ts on Adam
    expect(
      (await two.generate(prompts, greedy)).map((g) => g.tokens),
      what,
    ).toEqual(samples);
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function gone(pids: number[], withinMs = 10_000): Promise<boolean> {
  for (const t0 = Date.now(); Date.now() - t0 < withinMs; await new Promise((r) => setTimeout(r, 100)))
    if (!pids.some(alive)) return true;
  return false;
}

describe.skipIf(!python)('TorchEngine with two data-parallel ranks (torchrun, gloo)', () => {
  const engines: TorchEngine[] = [];
  const batch = testBatch();
  const opts = {
    python: python!,
    device: 'cpu',
    critic: 'shared',
    lora: { r: 4, alpha: 8 },
    echoStderr: false,
  } as const;
  beforeAll(async () => {
    engines.push(await TorchEngine.fromPretrained(TINY, { ...opts, ranks: 1 }));
    engines.push(await TorchEngine.fromPretrained(TINY, { ...opts, ranks: 2 }));
    // Two nodes of one rank each on this machine: node 1 is what a user starts on the second machine.
    const master = `127.0.0.1:${await freePort()}`;
    const write = process.stderr.write;
    let printed = '';
    process.stderr.write = ((s: string) => ((printed += s), true)) as typeof process.stderr.write;
    const node0 = TorchEngine.fromPretrained(TINY, { ...opts, ranks: 1, nodes: 2, master });
    process.stderr.write = write;
    await new Promise((r) => setTimeout(r, 200));
    const command = /\n {2}(PYTHONPATH=.*)\n/.exec(printed)?.[1];
    expect(command, printed).toContain('--node_rank=k');
    node1 = spawn('sh', ['-c', command!.replace('--node_rank=k', '--node_rank=1')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    node1.stderr!.on('data', (d: Buffer) => (node1Err += d.toString()));
    engines.push(await node0);
  }, 120_000);
  let node1: ReturnType<typeof spawn>;
  let node1Err = '';
  afterAll(() => engines.forEach((e) => e.dispose()));

  it('equals one rank: outputs, gradients (1e-4 relative), the step and the weights after it, greedy samples', async () => {
    const [one, ...many] = engines as [TorchEngine, TorchEngine, TorchEngine];
    expect(many.map((e) => [e.info.ranks, e.info.sharded])).toEqual([
      [2, false],
      [2, false],
    ]);
    expect(many[0]!.describe()).toMatch(
      /^torch engine: torch \S+ on cpu, float32, 2 ranks each holding the whole model$/,
    );
    await expectSameAsOneRank(one, many, ['2 ranks on one node', '2 nodes'], 'shared');
  }, 90_000);

  it('node 1 ends when node 0 is disposed', async () => {
    const pids = engines[2]!.info.pids;
    engines[2]!.dispose();
    expect(await gone(pids), node1Err).toBe(true);
    await new Promise((r) => (node1.exitCode === null ? node1.once('exit', r) : r(null)));
  }, 30_000);

  it('reports a rank that dies, and leaves no process behind', async () => {
    const e = await TorchEngine.fromPretrained(TINY, { python: python!, ranks: 2, device: 'cpu', echoStderr: false });
    const pids = e.info.pids;
    expect(pids).toHaveLength(2);
    process.kill(pids[1]!, 'SIGKILL');
    await expect(e.forward(batch, { role: 'policy' })).rejects.toThrow(
      new RegExp(
        `torch worker \\(pid \\d+\\) exited with code 1\\. torchrun reports: [^\\n]*rank 1 \\(pid ${pids[1]}\\) was killed by signal 9`,
      ),
    );
    e.dispose();
    expect(await gone([e.pid, ...pids])).toBe(true);
  }, 60_000);

  it('leaves no process behind when the Node process that started it is killed', async () => {
    const script = `const { TorchEngine } = await import(${JSON.stringify(join(import.meta.dirname, 'torch.ts'))});
      const e = await TorchEngine.fromPretrained(${JSON.stringify(TINY)}, { python: ${JSON.stringify(python)}, ranks: 2, device: 'cpu', echoStderr: false });
      console.log(JSON.stringify([e.pid, ...e.info.pids]));
      setInterval(() => {}, 1000);`;
    const node = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve) =>
      node.stdout!.once('data', (d: Buffer) => resolve(d.toString())),
    );
    const pids = JSON.parse(line) as number[];
    expect(pids.every(alive)).toBe(true);
    node.kill('SIGKILL');
    expect(await gone(pids)).toBe(true);
  }, 60_000);
});

describe.runIf(fsdpOnCpu)(
  'TorchEngine with the models sharded by FSDP2 over two CPU ranks (RAGEN_TORCH_FSDP=all)',
  () => {
    const engines: TorchEngine[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'ragen-fsdp-'));
    const start = async (opts: Parameters<typeof TorchEngine.fromPretrained>[1], path = TINY, ranks = 1) => {
      const e = await withFsdp('all', () =>
        TorchEngine.fromPretrained(path, { ...opts, python: python!, device: 'cpu', echoStderr: false, ranks }),
      );
      engines.push(e);
      expect(e.info.sharded).toBe(ranks > 1);
      if (ranks > 1) expect(e.describe()).toMatch(/, 2 ranks sharding the models with FSDP2$/);
      return e;
    };
    afterAll(() => {
      engines.forEach((e) => e.dispose());
      rmSync(dir, { recursive: true, force: true });
    });

    it('LoRA with a shared critic: equals one rank (outputs, gradients, the step, weights, greedy samples); its checkpoint, gathered from the shards, is adapter-only and loads on one rank', async () => {
      const opts = { critic: 'shared', lora: { r: 4, alpha: 8 } } as const;
      const two = await start(opts, TINY, 2);
      await expectSameAsOneRank(await start(opts), [two], ['FSDP2, LoRA'], 'shared');
      const ckpt = join(dir, 'lora-two');
      await two.save(ckpt);
      expect(readdirSync(ckpt).filter((f) => f.startsWith('model'))).toEqual([]);
      const adapter = JSON.parse(readFileSync(join(ckpt, 'adapter', 'adapter_config.json'), 'utf8')) as {
        base_model_name_or_path: string;
      };
      expect(adapter.base_model_name_or_path).toBe(resolve(TINY));
      const again = await start(opts, ckpt);
      const w = await two.tensors('policy');
      for (const [n, t] of await again.tensors('policy')) expect(maxAbsDiff(t, w.get(n)!), n).toBeLessThan(1e-6);
    }, 120_000);

    it("a full fine-tune with a separate critic and a reference: equals one rank; its checkpoint and optimizer state, written whole, resume on one rank exactly (and one rank's on the shards)", async () => {
      const opts = { critic: 'separate', reference: true } as const;
      const [one, two] = [await start(opts), await start(opts, TINY, 2)];
      await expectSameAsOneRank(one, [two], ['FSDP2, full fine-tune'], 'separate');
      const batch = testBatch();
      const [r1, r2] = [
        await one.forward(batch, { role: 'reference' }),
        await two.forward(batch, { role: 'reference' }),
      ];
      expect(maxAbsDiff(r1.logprobs, r2.logprobs)).toBeLessThan(1e-5);
      await one.save(join(dir, 'one'), { optimizer: true });
      await two.save(join(dir, 'two'), { optimizer: true });
      // The sharded ranks' checkpoint loads on one rank, and one rank's on the shards; a step from each equals one more
      // step of the engine that wrote it.
      const fromTwo = await start(opts, join(dir, 'two'));
      const fromOne = await start(opts, join(dir, 'one'), 2);
      const w = await two.tensors('policy');
      for (const [n, t] of await fromTwo.tensors('policy')) expect(maxAbsDiff(t, w.get(n)!), n).toBeLessThan(1e-6);
      await fromTwo.loadOptimizer(join(dir, 'two'));
      await fromOne.loadOptimizer(join(dir, 'one'));
      const settings = { lr: 1e-3, maxGradNorm: 1 };
      for (const e of [one, two, fromTwo, fromOne]) {
        await backwardBoth(e, 'separate');
        await e.optimizerStep('policy', settings);
        await e.optimizerStep('critic', settings);
      }
      for (const role of ['policy', 'critic'] as const) {
        const [a, b, c, d] = await Promise.all([one, two, fromTwo, fromOne].map((e) => e.tensors(role)));
        for (const [n, t] of a!) {
          expect(maxAbsDiff(c!.get(n)!, b!.get(n)!), `resumed on one rank: ${n}`).toBeLessThan(1e-5);
          expect(maxAbsDiff(d!.get(n)!, t), `resumed on the shards: ${n}`).toBeLessThan(1e-5);
        }
      }
    }, 180_000);

    it('bf16 (autocast, the GPU default): a full fine-tune equals one rank; LoRA stays within bf16 noise of float32 (one rank stores its frozen base in bf16, the shards keep float32)', async () => {
      const batch = testBatch();
      const logprobs = async (e: TorchEngine) => (await e.forward(batch, { role: 'policy' })).logprobs;
      const full = { critic: 'separate', reference: true, precision: 'bfloat16' } as const;
      const [one, two] = [await start(full), await start(full, TINY, 2)];
      expect(two.info.precision).toBe('bfloat16');
      expect(maxAbsDiff(await logprobs(one), await logprobs(two))).toBeLessThan(1e-5);
      const lora = { critic: 'shared', lora: { r: 4, alpha: 8 } } as const;
      const [f32, sharded] = [
        await start({ ...lora, precision: 'float32' }),
        await start({ ...lora, precision: 'bfloat16' }, TINY, 2),
      ];
      expect(maxAbsDiff(await logprobs(f32), await logprobs(sharded))).toBeLessThan(0.25); // docs/gpu.md's bf16 tolerance
    }, 120_000);
  },
);

describe.runIf(python !== null && !fsdpOnCpu)('RAGEN_TORCH_FSDP=all on a torch that cannot shard CPU ranks', () => {
  it('is refused at start, naming the torch version and the fix', async () => {
    const started = withFsdp('all', () =>
      TorchEngine.fromPretrained(TINY, { python: python!, device: 'cpu', echoStderr: false, ranks: 2 }),
    );
    await expect(started).rejects.toThrow(
      /RAGEN_TORCH_FSDP=all: torch \S+ cannot run FSDP2 on CPU ranks \(torch >= 2\.7 can\); use RAGEN_TORCH_FSDP=1/,
    );
  }, 60_000);

  it('is refused by the launcher, before any rank starts: one message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-launch-'));
    try {
      const rank = join(dir, 'rank.py');
      writeFileSync(rank, `open(${JSON.stringify(join(dir, 'started'))}, "w").close()\n`);
      const r = runWorkerPython(
        python!,
        ['-m', 'ragen_torch.launch', '--standalone', '--nproc_per_node=2', rank],
        60_000,
        { RAGEN_TORCH_FSDP: 'all' },
      );
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toMatch(
        /^RuntimeError: RAGEN_TORCH_FSDP=all: torch \S+ cannot run FSDP2 on CPU ranks \(torch >= 2\.7 can\); use RAGEN_TORCH_FSDP=1 [^\n]*$/,
      );
      expect(existsSync(join(dir, 'started')), 'a rank started').toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
