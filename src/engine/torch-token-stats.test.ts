// The torch worker's per-token log-prob and entropy without the whole-vocabulary logits (python/ragen_torch/
// token_stats.py) against the plain computation (full logits, float32 log_softmax): values and gradients in h and in
// the head's weight, over several chunks, with and without entropy, and under bf16 autocast.
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();

// Each case: N rows of hidden size C over a vocabulary V, `rows` rows per chunk (a chunk budget of 3 x 4 x V x rows
// bytes), a loss sum(a * logp) + sum(b * entropy) with random a, b so that both gradients enter with either sign.
const SCRIPT = `
import json, torch
from ragen_torch.token_stats import token_stats, plain_token_stats
torch.manual_seed(0)
res = {}
def case(name, N, C, V, rows, entropy, autocast=False):
    h0, w0 = torch.randn(N, C) * 2, torch.randn(V, C) * 0.5
    t = torch.randint(0, V, (N,))
    a, b = torch.randn(N), torch.randn(N)
    out = {}
    for kind, fn in (("chunked", lambda h, w: token_stats(h, w, t, entropy, chunk_bytes=3 * 4 * V * rows)),
                     ("plain", lambda h, w: plain_token_stats(h, w, t, entropy))):
        h, w = h0.clone().requires_grad_(), w0.clone().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            lp, ent = fn(h, w)
        ((a * lp).sum() + ((b * ent).sum() if ent is not None else 0)).backward()
        out[kind] = dict(lp=lp.detach(), ent=ent, dh=h.grad, dw=w.grad, dtype=str(lp.dtype))
    c, p = out["chunked"], out["plain"]
    rel = lambda x, y: float((x.float() - y.float()).abs().max() / y.float().abs().max())
    res[name] = dict(lp=rel(c["lp"], p["lp"]), ent=None if c["ent"] is None else rel(c["ent"].detach(), p["ent"].detach()),
                     dh=rel(c["dh"], p["dh"]), dw=rel(c["dw"], p["dw"]), dtype=c["dtype"], entropyNone=c["ent"] is None)
case("several chunks", 37, 16, 300, 5, True)
case("one chunk", 9, 8, 50, 100, True)
case("log-probs only", 23, 16, 300, 4, False)
case("bf16 autocast", 29, 16, 256, 7, True, autocast=True)
print(json.dumps(res))
`;

interface Diff {
  lp: number;
  ent: number | null;
  dh: number;
  dw: number;
  dtype: string;
  entropyNone: boolean;
}

describe.runIf(python)('torch worker: chunked log-probs and entropy', () => {
  const r = python
    ? spawnSync(python, ['-c', SCRIPT], {
        encoding: 'utf8',
        env: { ...process.env, PYTHONPATH: workerPackageDir() },
        timeout: 60_000,
      })
    : null;
  const res = () => {
    expect(r!.status, r!.stderr).toBe(0);
    return JSON.parse(r!.stdout) as Record<string, Diff>;
  };

  test('equal the full-logits computation in float32, values and both gradients, across chunk boundaries', () => {
    for (const name of ['several chunks', 'one chunk']) {
      const d = res()[name]!;
      for (const k of ['lp', 'ent', 'dh', 'dw'] as const) expect(d[k], `${name}: ${k}`).toBeLessThan(1e-5);
      expect(d.dtype).toBe('torch.float32');
    }
  });

  test('without entropy: no entropy output, and the log-prob gradient alone is right', () => {
    const d = res()['log-probs only']!;
    expect(d.entropyNone).toBe(true);
    for (const k of ['lp', 'dh', 'dw'] as const) expect(d[k], k).toBeLessThan(1e-5);
  });

  test('under bf16 autocast: the matmul in bf16 as F.linear would, outputs in float32, gradients within bf16 rounding', () => {
    const d = res()['bf16 autocast']!;
    expect(d.dtype).toBe('torch.float32');
    expect(d.lp).toBeLessThan(1e-5); // the same bf16 logits, reduced in float32 both ways
    expect(d.ent!).toBeLessThan(1e-5);
    for (const k of ['dh', 'dw'] as const) expect(d[k], k).toBeLessThan(2e-2); // bf16 has 8 bits of mantissa
  });
});
