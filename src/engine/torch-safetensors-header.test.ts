// The torch worker reads safetensors headers itself (python/ragen_torch/safetensors_header.py, no torch needed): the
// same damaged headers that src/model/safetensors.ts refuses are refused there, in one sentence naming the same field.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSafetensors } from '../model/index.js';
import { workerPackageDir } from './torch-worker.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-st-py-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// Reads the length and the header the way safetensors_io.read_safetensors does, and prints the verdict.
const SCRIPT = `
import json, os, struct, sys
from ragen_torch.safetensors_header import CheckpointError, check_header, check_header_length
path = sys.argv[1]
size = os.path.getsize(path)
try:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        check_header_length(n, size, path)
        entries, meta = check_header(json.loads(f.read(n)), size - 8 - n, path, ["F32", "F16", "BF16", "F64", "I32", "I64"])
    print("ok", json.dumps([e[0] for e in entries]))
except CheckpointError as e:
    print("refused", e)
`;

/** What the worker's header check says of a file: 'ok [names]' or 'refused <message>'. */
function pythonVerdict(bytes: Uint8Array): string {
  const path = join(tmp, 'model.safetensors');
  writeFileSync(path, bytes);
  const python = process.env.RAGEN_PYTHON ?? 'python3';
  const r = spawnSync(python, ['-c', SCRIPT, path], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: workerPackageDir() },
    timeout: 30_000,
  });
  expect(r.stderr).toBe('');
  return r.stdout.trim();
}

function rawFile(header: unknown, dataLen: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + dataLen);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

const q = { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] };
const k = { dtype: 'F32', shape: [2, 2], data_offsets: [16, 32] };

describe("items 7 and 16: the torch worker's safetensors header check", () => {
  it('accepts tensors that tile the data section in any order', () => {
    expect(pythonVerdict(rawFile({ k, q }, 32))).toBe('ok ["k", "q"]');
  });

  const cases: [string, unknown, number, RegExp][] = [
    [
      "item 7: k_proj's offsets equal to q_proj's",
      { q, k: { ...k, data_offsets: [0, 16] }, pad: { dtype: 'F32', shape: [4], data_offsets: [16, 32] } },
      32,
      /tensor `[qk]`'s data_offsets \[0, 16\] overlap tensor `[qk]`'s \[0, 16\]/,
    ],
    [
      'item 7: a negative begin',
      { q: { ...q, data_offsets: [-16, 0] }, k },
      32,
      /tensor `q` has `data_offsets` = \[-16, 0\]; expected a pair \[begin, end\] of non-negative integers/,
    ],
    [
      'item 7: a gap',
      { q, k: { ...k, data_offsets: [20, 36] } },
      36,
      /bytes \[16, 20\) of the data section belong to no tensor/,
    ],
    [
      'item 16: a null entry',
      { q: null },
      16,
      /tensor `q` has header entry null; expected an object \{dtype, shape, data_offsets\}/,
    ],
    [
      'item 16: an entry without data_offsets',
      { q: { dtype: 'F32', shape: [4] } },
      16,
      /tensor `q` has no `data_offsets`; expected a pair/,
    ],
    [
      'item 16: shape "abc"',
      { q: { ...q, shape: 'abc' } },
      16,
      /tensor `q` has `shape` = "abc"; expected an array of non-negative integers/,
    ],
    [
      'item 16: metadata that is not string -> string',
      { __metadata__: { step: 3 }, q },
      16,
      /the header's `__metadata__` = \{"step": 3\} is not an object of strings to strings/,
    ],
  ];
  for (const [what, header, dataLen, message] of cases) {
    it(`refuses ${what}, in one sentence naming the file, as the TypeScript reader does`, () => {
      const bytes = rawFile(header, dataLen);
      expect(() => parseSafetensors(bytes, 'x')).toThrow(); // the TypeScript reader refuses it too
      const verdict = pythonVerdict(bytes);
      expect(verdict).toMatch(/^refused .*model.safetensors: /);
      expect(verdict).toMatch(message);
      expect(verdict.split('\n')).toHaveLength(1);
    });
  }

  it('item 7: refuses a header length past the format limit', () => {
    const bytes = rawFile({ q }, 16);
    new DataView(bytes.buffer).setBigUint64(0, 2n ** 62n, true);
    expect(pythonVerdict(bytes)).toMatch(/^refused .*over the 100000000-byte limit of the format/);
  });
});
