// GPU-only checks of the torch worker, skipped without CUDA (CI has none): the CUDA-graph decode step against eager
// decoding, and FSDP on two GPUs against one GPU (outputs, gradients, the step, a checkpoint). Run them on a GPU host
// with `RAGEN_TORCH_THREADS=1 npx vitest run src/engine/torch-gpu.test.ts`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

function probe(): { gpus: number; fsdp: boolean } {
  if (!python) return { gpus: 0, fsdp: false };
  const code =
    'import torch\nfrom ragen_torch.fsdp import fully_shard_api\nprint(torch.cuda.device_count(), int(fully_shard_api() is not None))';
  const r = spawnSync(python, ['-c', code], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: workerPackageDir() },
    timeout: 60_000,
  });
  const [gpus, fsdp] = r.stdout.trim().split(' ').map(Number);
  return { gpus: gpus ?? 0, fsdp: fsdp === 1 };
}
const { gpus, fsdp } = probe();

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe.runIf(gpus >= 1)('torch worker on CUDA: CUDA-graph decoding', () => {
  it('gives the eager tokens and log-probs, float32 and bf16, with rows stopping early', () => {
    const script = `
import json, tempfile, torch
from ragen_torch.random_checkpoint import write_random_checkpoint
from ragen_torch.model import load_decoder
from ragen_torch.generate import generate
d = write_random_checkpoint(tempfile.mkdtemp(), "tiny", 3, torch.float32)
m = load_decoder(d, torch.device("cuda")).eval()
g = torch.Generator().manual_seed(1)
prompts = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (3, 9, 5, 12, 1, 7, 4, 8)]
ac = lambda: torch.autocast("cuda", dtype=torch.bfloat16)
out = {}
for name, autocast in (("float32", None), ("bfloat16", ac)):
    for case, p in (("greedy", dict(temperature=0)), ("stops", dict(temperature=0, stopTokenIds=list(range(0, 256, 10))))):
        out[name + "/" + case] = {mode: generate(m, prompts, dict(maxNewTokens=24, seed=5, **p), None, 4096, autocast, mode) for mode in ("eager", "graph")}
print(json.dumps(out))
`;
    const r = spawnSync(python!, ['-c', script], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: workerPackageDir() },
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/CUDA graph capture of the decode step failed/);
    const out = JSON.parse(r.stdout) as Record<
      string,
      { eager: [number[], number[], string][]; graph: [number[], number[], string][] }
    >;
    for (const [name, { eager, graph }] of Object.entries(out)) {
      expect(
        graph.map((x) => x[0]),
        name,
      ).toEqual(eager.map((x) => x[0]));
      const tol = name.startsWith('bfloat16') ? 2e-2 : 1e-4;
      eager.forEach((row, i) => expect(maxAbsDiff(graph[i]![1], row[1]), `${name} row ${i}`).toBeLessThan(tol));
    }
  }, 180_000);
});

describe.runIf(gpus >= 2 && fsdp)('torch worker on two GPUs: FSDP2', () => {
  it('equals one GPU: outputs, gradients, the AdamW step, greedy samples, and a checkpoint gathered whole', async () => {
    const rng = new Rng(4);
    const batch = sequenceBatch(
      Array.from({ length: 5 }, (_, b) => Array.from({ length: 4 + 3 * b }, () => Math.floor(rng.random() * 1000))),
    );
    const opts = {
      python: python!,
      device: 'cuda',
      precision: 'float32',
      critic: 'shared',
      lora: { r: 4, alpha: 8 },
      echoStderr: false,
    } as const;
    const one = await TorchEngine.fromPretrained(TINY, { ...opts, ranks: 1 });
    const two = await TorchEngine.fromPretrained(TINY, { ...opts, ranks: 2 });
    try {
      const [a, b] = [
        await one.forward(batch, { role: 'policy', entropy: true }),
        await two.forward(batch, { role: 'policy', entropy: true }),
      ];
      expect(maxAbsDiff(a.logprobs, b.logprobs)).toBeLessThan(1e-4);
      const gr = new Rng(8);
      const g = { logprobs: a.logprobs.map(() => gr.random() - 0.5), values: a.values!.map(() => gr.random() - 0.5) };
      for (const e of [one, two]) await e.backward(batch, { role: 'policy', values: true }, () => g);
      const [g1, g2] = [await one.tensors('policy', 'grad'), await two.tensors('policy', 'grad')];
      for (const [n, x] of g1)
        expect(maxAbsDiff(g2.get(n)!, x), n).toBeLessThanOrEqual(
          1e-3 * maxAbsDiff(x, new Float32Array(x.length)) + 1e-6,
        );
      const settings = { lr: 1e-3, maxGradNorm: 1 };
      const [s1, s2] = [await one.optimizerStep('policy', settings), await two.optimizerStep('policy', settings)];
      expect(Math.abs(s1.gradNorm - s2.gradNorm)).toBeLessThan(1e-3 * s1.gradNorm);
      const [w1, w2] = [await one.tensors('policy'), await two.tensors('policy')];
      for (const [n, w] of w1) expect(maxAbsDiff(w2.get(n)!, w), n).toBeLessThan(0.25 * settings.lr);
      const prompts = [[1, 2, 3], [40, 41], [7], [9, 10, 11, 12]];
      const greedy = { maxNewTokens: 6, temperature: 0, seed: 0 };
      expect((await two.generate(prompts, greedy)).map((x) => x.tokens)).toEqual(
        (await one.generate(prompts, greedy)).map((x) => x.tokens),
      );
      const dir = mkdtempSync(join(tmpdir(), 'ragen-fsdp-'));
      await two.save(dir, { optimizer: true });
      const back = await TorchEngine.fromPretrained(dir, { ...opts, ranks: 1 });
      try {
        const w3 = await back.tensors('policy');
        for (const [n, w] of w2) expect(maxAbsDiff(w3.get(n)!, w), n).toBe(0);
      } finally {
        back.dispose();
      }
    } finally {
      one.dispose();
      two.dispose();
    }
  }, 300_000);
});
