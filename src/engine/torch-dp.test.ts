// Data parallel in the torch worker, launched with torchrun: two gloo ranks on one node, and two "nodes" of one rank
// each (node 1 started with the command the engine prints for it), on the same global batch give the outputs,
// gradients and weights of one rank (each rank takes half the rows; gradients are summed across ranks); a rank that
// dies is reported, and no process outlives the engine.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, Rng } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import type { ForwardResult, OutputGradients } from './types.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const maxAbs = (a: ArrayLike<number>) => maxAbsDiff(a, new Float32Array(a.length));

function grads(out: ForwardResult): OutputGradients {
  const rng = new Rng(8);
  return { logprobs: out.logprobs.map(() => rng.random() - 0.5), values: out.values!.map(() => rng.random() - 0.5) };
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
  for (const t0 = Date.now(); Date.now() - t0 < withinMs; await new Promise((r) => setTimeout(r, 100))) if (!pids.some(alive)) return true;
  return false;
}

describe.skipIf(!python)('TorchEngine with two data-parallel ranks (torchrun, gloo)', () => {
  const engines: TorchEngine[] = [];
  const rng = new Rng(4);
  const batch = sequenceBatch(Array.from({ length: 5 }, (_, b) => Array.from({ length: 4 + 3 * b }, () => Math.floor(rng.random() * 1000))));
  const opts = { python: python!, device: 'cpu', critic: 'shared', lora: { r: 4, alpha: 8 }, echoStderr: false } as const;
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
    node1 = spawn('sh', ['-c', command!.replace('--node_rank=k', '--node_rank=1')], { stdio: ['ignore', 'ignore', 'pipe'] });
    node1.stderr!.on('data', (d: Buffer) => (node1Err += d.toString()));
    engines.push(await node0);
  }, 120_000);
  let node1: ReturnType<typeof spawn>;
  let node1Err = '';
  afterAll(() => engines.forEach((e) => e.dispose()));

  it('equals one rank: outputs, gradients (1e-4 relative), the step and the weights after it, greedy samples', async () => {
    const [one, ...many] = engines as [TorchEngine, TorchEngine, TorchEngine];
    expect(many.map((e) => e.info.ranks)).toEqual([2, 2]);
    const a = await one.forward(batch, { role: 'policy', entropy: true });
    await one.backward(batch, { role: 'policy', values: true }, grads);
    const settings = { lr: 1e-3, maxGradNorm: 1 };
    const g1 = { policy: await one.tensors('policy', 'grad'), critic: await one.tensors('critic', 'grad') };
    const s1 = await one.optimizerStep('policy', settings);
    const w1 = await one.tensors('policy');
    const prompts = [[1, 2, 3], [40, 41], [7], [9, 10, 11, 12]];
    const greedy = { maxNewTokens: 6, temperature: 0, seed: 0 };
    const samples = (await one.generate(prompts, greedy)).map((g) => g.tokens);
    for (const [k, two] of many.entries()) {
      const what = k === 0 ? '2 ranks on one node' : '2 nodes';
      const b = await two.forward(batch, { role: 'policy', entropy: true });
      expect(maxAbsDiff(a.logprobs, b.logprobs), what).toBeLessThan(1e-5);
      expect(maxAbsDiff(a.entropy!, b.entropy!), what).toBeLessThan(1e-5);
      await two.backward(batch, { role: 'policy', values: true }, grads);
      for (const role of ['policy', 'critic'] as const) {
        const g2 = await two.tensors(role, 'grad');
        expect([...g2.keys()]).toEqual([...g1[role].keys()]);
        for (const [n, g] of g1[role]) expect(maxAbsDiff(g2.get(n)!, g), `${what}: ${n}`).toBeLessThanOrEqual(1e-4 * maxAbs(g) + 1e-8);
        expect(Math.max(...[...g1[role].values()].map(maxAbs))).toBeGreaterThan(0);
      }
      const s2 = await two.optimizerStep('policy', settings);
      expect(Math.abs(s1.gradNorm - s2.gradNorm), what).toBeLessThan(1e-4 * s1.gradNorm);
      const w2 = await two.tensors('policy');
      for (const [n, w] of w1) expect(maxAbsDiff(w2.get(n)!, w), `${what}: ${n}`).toBeLessThan(0.25 * settings.lr); // see torch.test.ts on Adam
      expect((await two.generate(prompts, greedy)).map((g) => g.tokens), what).toEqual(samples);
    }
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
    await expect(e.forward(batch, { role: 'policy' })).rejects.toThrow(new RegExp(`torch worker \\(pid \\d+\\) exited with code 1\\. torchrun reports: [^\\n]*rank 1 \\(pid ${pids[1]}\\) was killed by signal 9`));
    e.dispose();
    expect(await gone([e.pid, ...pids])).toBe(true);
  }, 60_000);

  it('leaves no process behind when the Node process that started it is killed', async () => {
    const script = `const { TorchEngine } = await import(${JSON.stringify(join(import.meta.dirname, 'torch.ts'))});
      const e = await TorchEngine.fromPretrained(${JSON.stringify(TINY)}, { python: ${JSON.stringify(python)}, ranks: 2, device: 'cpu', echoStderr: false });
      console.log(JSON.stringify([e.pid, ...e.info.pids]));
      setInterval(() => {}, 1000);`;
    const node = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve) => node.stdout!.once('data', (d: Buffer) => resolve(d.toString())));
    const pids = JSON.parse(line) as number[];
    expect(pids.every(alive)).toBe(true);
    node.kill('SIGKILL');
    expect(await gone(pids)).toBe(true);
  }, 60_000);
});
