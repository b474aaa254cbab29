// The torch worker's static-cache decode step (python/ragen_torch/decode.py, the path CUDA graphs capture) against the
// eager one on the CPU: the same tokens and log-probs, with rows finishing at different steps (masked, then compacted).
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();

const SCRIPT = `
import json, sys, tempfile, torch
from ragen_torch.random_checkpoint import write_random_checkpoint
from ragen_torch.model import load_decoder
from ragen_torch.generate import generate
d = tempfile.mkdtemp()
write_random_checkpoint(d, "tiny", 3, torch.float32)
m = load_decoder(d, torch.device("cpu")).eval()
g = torch.Generator().manual_seed(1)
prompts = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (3, 9, 5, 12, 1, 7)]
cases = {"greedy": dict(temperature=0), "sampled": dict(temperature=1.0, topK=50, topP=0.9),
         "stops": dict(temperature=1.0, stopTokenIds=list(range(0, 256, 10)))}
import ragen_torch.generate as G
class Counted(G.StaticStep):  # counts the static caches a call builds: compaction makes more than one
    made = 0
    def __init__(self, *a, **k):
        Counted.made += 1
        super().__init__(*a, **k)
G.StaticStep = Counted
out, caches = {}, {}
for k, p in cases.items():
    Counted.made = 0
    out[k] = {mode: generate(m, prompts, dict(maxNewTokens=16, seed=5, **p), None, 64, None, mode) for mode in ("eager", "static")}
    caches[k] = Counted.made
print(json.dumps({"out": out, "caches": caches}))
`;

type Result = [number[], number[], string][];

function run(code: string, env: Record<string, string> = {}) {
  return spawnSync(python!, ['-c', code], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: workerPackageDir(), ...env },
    timeout: 60_000,
  });
}

describe.runIf(python)('torch worker: static-cache decode', () => {
  test('gives the eager decode tokens and log-probs (greedy, sampled, rows stopping early and compacted)', () => {
    const r = run(SCRIPT);
    expect(r.status, r.stderr).toBe(0);
    const { out, caches } = JSON.parse(r.stdout) as {
      out: Record<string, { eager: Result; static: Result }>;
      caches: Record<string, number>;
    };
    for (const [name, { eager, static: st }] of Object.entries(out)) {
      expect(
        st.map((x) => x[0]),
        name,
      ).toEqual(eager.map((x) => x[0]));
      expect(
        st.map((x) => x[2]),
        name,
      ).toEqual(eager.map((x) => x[2]));
      for (let i = 0; i < eager.length; i++) {
        expect(st[i]![1].length).toBe(eager[i]![1].length);
        // Attention over the whole static cache sums the same terms plus exact zeros, in another order: float32 ulps.
        eager[i]![1].forEach((lp, t) =>
          expect(Math.abs(st[i]![1][t]! - lp), `${name} row ${i} token ${t}`).toBeLessThan(1e-5),
        );
      }
    }
    // The stop case must really have rows leaving at different steps, or it would not exercise the masking.
    const lengths = new Set(out.stops!.eager.map((x) => x[0].length));
    expect(lengths.size).toBeGreaterThan(2);
    // 6 rows: the live half moves to a smaller cache once 3 are done (and again at 1); with none done, one cache.
    expect(caches.stops).toBeGreaterThan(1);
    expect(caches.greedy).toBe(1);
  }, 60_000);

  test('attends over the written keys in buckets: spans grow with the write index, across bucket boundaries, with the eager tokens and log-probs', () => {
    // BUCKET 4 (256 in use) so that 16 new tokens after 12-token prompts cross bucket boundaries: the write index runs
    // 12..26 in a cache of 12 + 16 = 28 keys, so the spans are 16 (writes 12-15), 20, 24, then 28 (the capacity).
    const code = SCRIPT.replace(
      'out, caches = {}, {}',
      [
        'import ragen_torch.decode as D',
        'D.BUCKET = 4',
        'spans = {}',
        'class Spans(Counted):',
        '    def __call__(self, tok, live, cur):',
        '        out = super().__call__(tok, live, cur)',
        '        spans.setdefault(key, []).append((self.rows, self.span))',
        '        return out',
        'G.StaticStep = Spans',
        'key = None',
        'out, caches = {}, {}',
      ].join('\n'),
    )
      .replace('for k, p in cases.items():\n', 'for k, p in cases.items():\n    key = k\n')
      .replace('print(json.dumps({"out": out, "caches": caches}))', 'print(json.dumps({"out": out, "spans": spans}))');
    const r = run(code);
    expect(r.status, r.stderr).toBe(0);
    const { out, spans } = JSON.parse(r.stdout) as {
      out: Record<string, { eager: Result; static: Result }>;
      spans: Record<string, [number, number][]>;
    };
    for (const [name, { eager, static: st }] of Object.entries(out)) {
      expect(
        st.map((x) => x[0]),
        name,
      ).toEqual(eager.map((x) => x[0]));
      eager.forEach((row, i) =>
        row[1].forEach((lp, t) =>
          expect(Math.abs(st[i]![1][t]! - lp), `${name} row ${i} token ${t}`).toBeLessThan(1e-5),
        ),
      );
    }
    expect([...new Set(spans.greedy!.map(([, s]) => s))]).toEqual([16, 20, 24, 28]);
    expect(spans.greedy!.length).toBe(15); // one static step per token after the first
    // With rows leaving (smaller caches), the spans still never shrink and stay multiples of 4 or the capacity.
    const stopSpans = spans.stops!.map(([, s]) => s);
    expect(stopSpans.every((s, i) => i === 0 || s >= stopSpans[i - 1]!)).toBe(true);
    expect(stopSpans.every((s) => s % 4 === 0 || s === 28)).toBe(true);
    expect(new Set(spans.stops!.map(([rows]) => rows)).size).toBeGreaterThan(1);
  }, 60_000);

  test('RAGEN_TORCH_DECODE: a bad value and graph without CUDA are named errors', () => {
    const code = [
      'import os, torch',
      'from ragen_torch.decode import decode_mode',
      'for v in ("fast", "graph", "static"):',
      '    os.environ["RAGEN_TORCH_DECODE"] = v',
      '    try:',
      '        print(decode_mode(torch.device("cpu")))',
      '    except ValueError as e:',
      '        print(e)',
    ].join('\n');
    const lines = run(code).stdout.trim().split('\n');
    expect(lines[0]).toMatch(/RAGEN_TORCH_DECODE=`fast` is not a decode mode; use one of eager, static, graph/);
    expect(lines[1]).toMatch(/needs a CUDA device, the worker runs on cpu; use static or eager/);
    expect(lines[2]).toBe('static');
  }, 30_000);
});
