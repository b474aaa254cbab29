// The torch worker's rollout prefills each distinct prompt once (a group's first turn holds G copies of one initial
// state) and copies its cache rows: the same tokens and log-probs as every row prefilled on its own, in the eager and
// the static decode, greedy and sampled, with the prefill really running on the distinct prompts only.
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();

const SCRIPT = `
import json, tempfile, torch
from ragen_torch.random_checkpoint import write_random_checkpoint
from ragen_torch.model import load_decoder
from ragen_torch.generate import generate
d = tempfile.mkdtemp()
write_random_checkpoint(d, "tiny", 3, torch.float32)
m = load_decoder(d, torch.device("cpu")).eval()
prefilled = []
hidden = m.hidden
def counting(ids, positions=None, key_valid=None, cache=None, start=0, **kw):
    if start == 0:
        prefilled.append(ids.shape[0])
    return hidden(ids, positions, key_valid, cache, start, **kw)
m.hidden = counting
g = torch.Generator().manual_seed(1)
a, b, c = (torch.randint(0, 256, (n,), generator=g).tolist() for n in (7, 12, 4))
prompts = [a, b, a, c, a, b, c, a]
out = {}
for mode in ("eager", "static"):
    for name, p in {"greedy": dict(temperature=0), "sampled": dict(temperature=1.0, topK=50)}.items():
        r = {}
        for share in (True, False):
            prefilled.clear()
            r[share] = dict(res=generate(m, prompts, dict(maxNewTokens=10, seed=5, **p), None, 64, None, mode, share), rows=sum(prefilled))
        out[f"{mode} {name}"] = dict(shared=r[True], separate=r[False])
print(json.dumps(out))
`;

type Result = [number[], number[], string][];

describe.runIf(python)('torch worker: shared-prompt prefill', () => {
  test('gives the tokens and log-probs of separate prefills, prefilling 3 distinct prompts for 8 rows', () => {
    const r = spawnSync(python!, ['-c', SCRIPT], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: workerPackageDir() },
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, Record<'shared' | 'separate', { res: Result; rows: number }>>;
    expect(Object.keys(out)).toHaveLength(4);
    for (const [name, { shared, separate }] of Object.entries(out)) {
      expect(shared.rows, name).toBe(3);
      expect(separate.rows, name).toBe(8);
      expect(
        shared.res.map((x) => x[0]),
        name,
      ).toEqual(separate.res.map((x) => x[0]));
      expect(
        shared.res.map((x) => x[2]),
        name,
      ).toEqual(separate.res.map((x) => x[2]));
      // Prefill batches of 3 and 8 rows round differently in the last float32 bits.
      shared.res.forEach((row, i) =>
        row[1].forEach((lp, t) =>
          expect(Math.abs(lp - separate.res[i]![1][t]!), `${name} ${i}:${t}`).toBeLessThan(1e-5),
        ),
      );
    }
    // Copies of a prompt sampled with different draws: sharing the prefill does not make them one trajectory.
    const sampled = out['eager sampled']!.shared.res;
    expect(sampled[0]![0]).not.toEqual(sampled[2]![0]);
  }, 60_000);
});
