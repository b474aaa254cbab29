// Checkpoints split into Hugging Face index + shards between the engines: the worker's reader refuses trailing bytes
// and reads a tensor past 2 GiB by offset; the torch and local engines each resume the other's sharded weights and
// optimizer state, and their own exactly.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeSafetensors } from '../model/index.js';
import { Rng } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';
import type { ForwardResult, OutputGradients, SequenceBatch } from './types.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-sharded-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

function py(code: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(python!, ['-c', code], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: workerPackageDir() },
    timeout: 120_000,
  });
}

describe.skipIf(!python)("the worker's safetensors reader", () => {
  it('refuses trailing bytes after the last tensor, naming the file and the byte counts', () => {
    const good = Buffer.from(
      serializeSafetensors(new Map([['w', { shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) }]])),
    );
    const path = join(root, 'tail.safetensors');
    const r = py(`import sys; from ragen_torch.safetensors_io import read_safetensors, CheckpointError
open(${JSON.stringify(path)}, "wb").write(bytes.fromhex(${JSON.stringify(good.toString('hex'))}) + b"xyz")
try:
    read_safetensors(${JSON.stringify(path)})
except CheckpointError as e:
    print(e)
    sys.exit(0)
sys.exit(3)`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(
      `${path}: 3 trailing bytes after the last tensor (its tensors end at byte 24 of a 27-byte data section); the file is damaged or not one safetensors file: use an earlier checkpoint`,
    );
  });

  it('reads one tensor stored past byte 2^31 of a sparse file without reading the file whole', () => {
    const path = join(root, 'big.safetensors');
    // The header and tail written here by hand (the format's spec), the 2.4 GB of zeros between them left sparse.
    const r = py(`import json, os, resource, struct
from ragen_torch.safetensors_io import read_safetensors
# 512 MB of address space beyond what is mapped now: reading the 2.4 GB file whole would raise MemoryError.
mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (mapped + (512 << 20), resource.RLIM_INFINITY))
big = 600_000_000
h = json.dumps({"big": {"dtype": "F32", "shape": [big], "data_offsets": [0, 4 * big]}, "tail": {"dtype": "F32", "shape": [2, 2], "data_offsets": [4 * big, 4 * big + 16]}}).encode()
with open(${JSON.stringify(path)}, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    f.seek(8 + len(h) + 4 * big)
    f.write(struct.pack("<4f", 1.5, -2.0, 3.0, 0.25))
assert os.path.getsize(${JSON.stringify(path)}) > 2**31
w, _ = read_safetensors(${JSON.stringify(path)}, only=lambda n: n == "tail")
print(sorted(w), w["tail"].shape, w["tail"].flatten().tolist())`);
    rmSync(path, { force: true });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("['tail'] torch.Size([2, 2]) [1.5, -2.0, 3.0, 0.25]");
  });

  it('saves bf16 weights as float32 tensor by tensor, never a float32 copy of the whole model', () => {
    const dir = join(root, 'bf16-save');
    // 8 tensors of 32 MB in bf16 (64 MB each in float32): 256 MB of headroom fits one float32 tensor at a time, not
    // the 512 MB float32 copy of all of them.
    const r = py(`import os, resource, torch
from ragen_torch.safetensors_io import save_weights, read_safetensors
w = {f"w{i}": torch.full((4096, 4096), float(i) + 0.5, dtype=torch.bfloat16) for i in range(8)}
mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (mapped + (256 << 20), resource.RLIM_INFINITY))
save_weights(${JSON.stringify(dir)}, w, dtype=torch.float32)
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
got, _ = read_safetensors(os.path.join(${JSON.stringify(dir)}, "model.safetensors"), only=lambda n: n == "w3")
print(got["w3"].dtype, got["w3"].shape, float(got["w3"][0, 0]), os.path.getsize(os.path.join(${JSON.stringify(dir)}, "model.safetensors")) // (1 << 20))`);
    rmSync(dir, { recursive: true, force: true });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('torch.float32 torch.Size([4096, 4096]) 3.5 512');
  });
});

/** Seeded output gradients for every output present. */
function gradsFor(out: ForwardResult, seed: number): OutputGradients {
  const rng = new Rng(seed);
  const g = (x?: Float32Array) => (x ? Float32Array.from(x, () => rng.random() - 0.5) : undefined);
  const r: OutputGradients = {};
  for (const k of ['logprobs', 'entropy', 'values'] as const) if (out[k]) r[k] = g(out[k]);
  return r;
}

function batch(): SequenceBatch {
  const rng = new Rng(5);
  return sequenceBatch([
    Array.from({ length: 12 }, () => Math.floor(rng.random() * 1024)),
    Array.from({ length: 7 }, () => Math.floor(rng.random() * 1024)),
  ]);
}

type Trainable = LocalEngine | TorchEngine;
const SETTINGS = { lr: 1e-3, weightDecay: 0.01, maxGradNorm: 0.5 };

async function step(e: Trainable, seed: number): Promise<void> {
  await e.backward(batch(), { role: 'policy', entropy: true }, (o) => gradsFor(o, seed));
  await e.optimizerStep('policy', SETTINGS);
  await e.backward(batch(), { role: 'critic' }, (o) => gradsFor(o, seed + 100));
  await e.optimizerStep('critic', SETTINGS);
  e.zeroGrad('policy'); // the shared critic's backward also reached the trunk
}

async function params(e: Trainable): Promise<Map<string, Float32Array>> {
  if (e instanceof TorchEngine) return e.tensors('policy');
  return new Map(e.parameters('policy').map(([n, t]) => [n, t.toFloat32Array()]));
}

async function maxDiff(a: Trainable, b: Trainable): Promise<number> {
  const [x, y] = [await params(a), await params(b)];
  expect([...x.keys()].sort()).toEqual([...y.keys()].sort());
  let m = 0;
  for (const [n, v] of x) for (let i = 0; i < v.length; i++) m = Math.max(m, Math.abs(v[i]! - y.get(n)![i]!));
  return m;
}

describe.skipIf(!python)('sharded checkpoints between the torch and local engines', () => {
  let torch: TorchEngine;
  let local: LocalEngine;
  const opened: Trainable[] = [];
  beforeAll(async () => {
    torch = await TorchEngine.fromPretrained(TINY, { python: python!, critic: 'shared', echoStderr: false });
    local = await LocalEngine.fromPretrained(TINY, { critic: 'shared' });
    opened.push(torch, local);
  }, 120_000);
  afterAll(() => {
    for (const e of opened) e.dispose();
  });

  it(
    "each engine writes index + shards, and each resumes its own and the other's: one more AdamW step matches",
    { timeout: 300_000 },
    async () => {
      for (let s = 0; s < 2; s++) for (const e of [torch, local]) await step(e, 10 + s);
      const dirs = { torch: join(root, 'from-torch'), local: join(root, 'from-local') };
      await torch.save(dirs.torch, { optimizer: true, maxShardBytes: 1 << 18 });
      await local.save(dirs.local, { optimizer: true, maxShardBytes: 1 << 18 });
      for (const dir of Object.values(dirs)) {
        for (const [folder, file] of [
          [dir, 'model'],
          [join(dir, 'optimizer'), 'policy'],
        ] as const) {
          expect(existsSync(join(folder, `${file}.safetensors`))).toBe(false);
          expect(existsSync(join(folder, `${file}.safetensors.index.json`))).toBe(true);
          expect(
            readdirSync(folder).filter((f) => f.startsWith(`${file}-`)).length,
            `${folder}/${file}`,
          ).toBeGreaterThan(2);
        }
      }
      const resumed = {
        torchFromTorch: await TorchEngine.fromPretrained(dirs.torch, {
          python: python!,
          critic: 'shared',
          echoStderr: false,
        }),
        torchFromLocal: await TorchEngine.fromPretrained(dirs.local, {
          python: python!,
          critic: 'shared',
          echoStderr: false,
        }),
        localFromLocal: await LocalEngine.fromPretrained(dirs.local, { critic: 'shared' }),
        localFromTorch: await LocalEngine.fromPretrained(dirs.torch, { critic: 'shared' }),
      };
      opened.push(...Object.values(resumed));
      await resumed.torchFromTorch.loadOptimizer(dirs.torch);
      await resumed.torchFromLocal.loadOptimizer(dirs.local);
      await resumed.localFromLocal.loadOptimizer(dirs.local);
      await resumed.localFromTorch.loadOptimizer(dirs.torch);
      for (const e of [torch, local, ...Object.values(resumed)]) await step(e, 50);
      // Same engine: the resumed run is the uninterrupted one. Across engines: within a quarter of one Adam step (as
      // torch.test.ts explains), while fresh moments would move entries by about a whole step.
      expect(await maxDiff(resumed.localFromLocal, local)).toBe(0);
      expect(await maxDiff(resumed.torchFromTorch, torch)).toBeLessThan(1e-6);
      expect(await maxDiff(resumed.torchFromLocal, torch)).toBeLessThan(0.25 * SETTINGS.lr);
      expect(await maxDiff(resumed.localFromTorch, local)).toBeLessThan(0.25 * SETTINGS.lr);
    },
  );
});
