import '../envs/index.js'; // the built-in environments
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError, FileSystemError } from '../util/index.js';
import { loadSavedConfig, loadConfig } from '../config/index.js';
import {
  checkpointMetrics,
  isCompleteCheckpoint,
  latestCheckpoint,
  listCheckpoints,
  readCheckpoint,
  writeCheckpoint,
  type CheckpointState,
  STATE_FILE,
  verifyCheckpoint,
} from './checkpoint-io.js';

const fresh = () => join(mkdtempSync(join(tmpdir(), 'ragen-ckpt-')), 'checkpoints');
const state = (step: number, extra: Partial<CheckpointState> = {}): CheckpointState => ({
  step,
  data: { trainSeedCounter: step * 8 },
  ...extra,
});

describe('checkpoint directories', () => {
  it('round-trip data position, trainer state, config and metrics', async () => {
    const root = fresh();
    const config = loadConfig({ config: 'bandit-ppo', overrides: ['trainer.steps=7'] });
    const metrics = join(root, '..', 'metrics.jsonl');
    writeFileSync(
      metrics,
      [1, 2, 3, 4].map((s) => JSON.stringify({ step: s, 'train/success': s / 10 })).join('\n') + '\n',
    );
    const dir = await writeCheckpoint(
      root,
      state(3, { trainer: { klCoef: 0.01, emptySteps: 2, pending: { 'actor/pg_loss': [0.5, 0.25] } } }),
      { config, metricsFile: metrics },
    );
    expect(dir).toBe(join(root, 'step-3'));
    expect(readCheckpoint(dir)).toEqual({
      step: 3,
      data: { trainSeedCounter: 24 },
      trainer: { klCoef: 0.01, emptySteps: 2, pending: { 'actor/pg_loss': [0.5, 0.25] } },
    });
    expect(loadSavedConfig(dir)).toEqual(config);
    expect(
      checkpointMetrics(dir)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).step),
    ).toEqual([1, 2, 3]);
  });

  it('read a checkpoint of version 1 (sizes only in its manifest, the unused `rng: {}` in its state) only when allowed', async () => {
    const dir = await writeCheckpoint(fresh(), state(2));
    const file = join(dir, STATE_FILE);
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), version: 1, rng: {} }, null, 1));
    const manifest = JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8'));
    manifest.version = 1;
    manifest.files = manifest.files.map((f: { path: string }) => ({
      path: f.path,
      bytes: readFileSync(join(dir, f.path)).length,
    }));
    writeFileSync(join(dir, 'checkpoint.json'), JSON.stringify(manifest));
    expect(() => readCheckpoint(dir)).toThrow(/records no SHA-256 for .*--allow-unverified-checkpoint/);
    const warnings: string[] = [];
    expect(readCheckpoint(dir, { allowUnverified: true, warn: (l) => warnings.push(l) })).toEqual({
      step: 2,
      data: { trainSeedCounter: 16 },
    });
    expect(warnings).toEqual([
      expect.stringMatching(/^warning: checkpoint `.*step-2`: .*trainer-state\.json.* checked by size only/),
    ]);
  });

  it('ignore an interrupted write (a step-N.tmp left behind by a killed process) and clean it up on the next write', async () => {
    const root = fresh();
    await writeCheckpoint(root, state(1));
    mkdirSync(join(root, 'step-2.tmp'));
    writeFileSync(join(root, 'step-2.tmp', 'model.safetensors'), 'partial');
    expect(latestCheckpoint(root)?.step).toBe(1);
    await writeCheckpoint(root, state(3));
    expect(readdirSync(root).sort()).toEqual(['step-1', 'step-3']);
  });

  it('remove its step-N.tmp when a write fails, and pass the failure on', async () => {
    const root = fresh();
    const failing = (d: string) => {
      writeFileSync(join(d, 'model.safetensors'), 'partial');
      throw new Error('engine failed');
    };
    await expect(writeCheckpoint(root, state(2), { writeModel: failing })).rejects.toThrow('engine failed');
    expect(readdirSync(root)).toEqual([]);
  });

  it('name the checkpoint path when the disk is full (ENOSPC carries no file name) and leave no partial files', async () => {
    const root = fresh();
    const full = (d: string) => {
      symlinkSync('/dev/full', join(d, 'model.safetensors')); // writes to /dev/full fail with ENOSPC
      writeFileSync(join(d, 'model.safetensors'), new Uint8Array(1 << 16));
    };
    const err = await writeCheckpoint(root, state(4), { writeModel: full }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileSystemError);
    expect((err as FileSystemError).code).toBe('ENOSPC');
    expect((err as Error).message).toMatch(
      /could not write checkpoint step 4: `.*step-4\.tmp`: the disk is full \(ENOSPC\); free space/,
    );
    expect(readdirSync(root)).toEqual([]);
  });

  it('verify files by content: a changed byte, a missing file and a garbage trainer state are each named', async () => {
    const root = fresh();
    const dir = await writeCheckpoint(root, state(6), {
      writeModel: (d) => writeFileSync(join(d, 'model.safetensors'), 'weights-0123'),
    });
    const bytes = readFileSync(join(dir, 'model.safetensors'));
    bytes[3]! ^= 1; // same size, other content: a size check cannot see it
    writeFileSync(join(dir, 'model.safetensors'), bytes);
    expect(isCompleteCheckpoint(dir)).toBe(true);
    expect(() => verifyCheckpoint(dir)).toThrow(/model\.safetensors does not match its SHA-256/);
    expect(() => readCheckpoint(dir)).toThrow(/model\.safetensors does not match its SHA-256/);

    const dir2 = await writeCheckpoint(root, state(7), {
      writeModel: (d) => writeFileSync(join(d, 'model.safetensors'), 'w'),
    });
    rmSync(join(dir2, 'model.safetensors'));
    expect(() => readCheckpoint(dir2)).toThrow(/model\.safetensors is missing \(listed in checkpoint\.json\)/);

    const dir3 = await writeCheckpoint(root, state(8));
    const garbage = 'x'.repeat(readFileSync(join(dir3, STATE_FILE)).length);
    writeFileSync(join(dir3, STATE_FILE), garbage);
    expect(() => readCheckpoint(dir3)).toThrow(/trainer-state\.json does not match its SHA-256/);
    // Without a digest (a version-1 manifest) the garbage is still a named CheckpointError, not a JSON stack.
    const manifest = JSON.parse(readFileSync(join(dir3, 'checkpoint.json'), 'utf8'));
    for (const f of manifest.files) delete f.sha256;
    writeFileSync(join(dir3, 'checkpoint.json'), JSON.stringify(manifest));
    expect(() => readCheckpoint(dir3, { allowUnverified: true, warn: () => {} })).toThrow(
      /trainer-state\.json is not valid JSON/,
    );
  });

  it('find the latest complete checkpoint, skipping ones whose manifest or files are missing or truncated', async () => {
    const root = fresh();
    for (const s of [2, 10, 9])
      await writeCheckpoint(root, state(s), {
        writeModel: (d) => writeFileSync(join(d, 'model.safetensors'), 'weights'),
      });
    mkdirSync(join(root, 'step-11')); // a copy without a manifest
    expect(latestCheckpoint(root)).toEqual({ step: 10, dir: join(root, 'step-10') });
    truncateSync(join(root, 'step-10', 'model.safetensors'), 3);
    expect(isCompleteCheckpoint(join(root, 'step-10'))).toBe(false);
    expect(latestCheckpoint(root)?.step).toBe(9);
    expect(() => readCheckpoint(join(root, 'step-10'))).toThrow(CheckpointError);
    expect(listCheckpoints(join(root, 'nope'))).toEqual([]);
  });

  it('keep the last K and replace a re-written step', async () => {
    const root = fresh();
    for (const s of [1, 2, 3, 4]) await writeCheckpoint(root, state(s), { keep: 2 });
    expect(listCheckpoints(root).map((c) => c.step)).toEqual([3, 4]);
    await writeCheckpoint(root, state(4, { data: { trainSeedCounter: 99 } }), { keep: 2 });
    expect(readCheckpoint(join(root, 'step-4')).data.trainSeedCounter).toBe(99);
    expect(readdirSync(root).sort()).toEqual(['step-3', 'step-4']);
  });

  it("record an adapter-only checkpoint's base files (size, SHA-256) and refuse the checkpoint when one changed", async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'ragen-base-'));
    const base = join(tmp, 'base');
    mkdirSync(base);
    writeFileSync(join(base, 'config.json'), '{}');
    writeFileSync(join(base, 'model.safetensors'), 'base-weights-0123');
    const adapterOver = (b: string) => (d: string) => {
      writeFileSync(join(d, 'config.json'), '{}');
      mkdirSync(join(d, 'adapter'));
      writeFileSync(join(d, 'adapter', 'adapter_config.json'), JSON.stringify({ base_model_name_or_path: b }));
    };
    const root = fresh();
    const dir = await writeCheckpoint(root, state(1), { writeModel: adapterOver(base) });
    const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
    expect(JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8')).base).toEqual({
      dir: base,
      files: [{ path: 'model.safetensors', bytes: 17, sha256: sha('base-weights-0123') }],
    });
    expect(verifyCheckpoint(dir).base?.dir).toBe(base);

    const bytes = readFileSync(join(base, 'model.safetensors'));
    bytes[5]! ^= 1; // same size, other content
    writeFileSync(join(base, 'model.safetensors'), bytes);
    const changed = new RegExp(
      `holds LoRA adapters over the base model \`${base}\`, and its model\.safetensors does not match its SHA-256 in checkpoint\.json: the base changed since the checkpoint was written; put the base model the adapter was trained on back at \`${base}\``,
    );
    expect(() => verifyCheckpoint(dir)).toThrow(changed);
    expect(() => readCheckpoint(dir)).toThrow(changed);

    // a sharded base: the index and every shard it names
    const sharded = join(tmp, 'sharded');
    mkdirSync(sharded);
    writeFileSync(join(sharded, 'config.json'), '{}');
    const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
    const index = { weight_map: { a: shards[0], b: shards[1], c: shards[0] } };
    writeFileSync(join(sharded, 'model.safetensors.index.json'), JSON.stringify(index));
    for (const s of shards) writeFileSync(join(sharded, s), s);
    const dir2 = await writeCheckpoint(root, state(2), { writeModel: adapterOver(sharded) });
    expect(verifyCheckpoint(dir2).base?.files.map((f) => f.path)).toEqual(['model.safetensors.index.json', ...shards]);
    rmSync(join(sharded, shards[1]!));
    expect(() => verifyCheckpoint(dir2)).toThrow(/and its model-00002-of-00002\.safetensors is missing/);

    // a checkpoint with its own weights names no base
    const own = await writeCheckpoint(root, state(3), {
      writeModel: (d) => writeFileSync(join(d, 'model.safetensors'), 'w'),
    });
    expect(JSON.parse(readFileSync(join(own, 'checkpoint.json'), 'utf8')).base).toBeUndefined();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("put the engine's model files in the manifest", async () => {
    const root = fresh();
    const dir = await writeCheckpoint(root, state(5), {
      writeModel: (d) => {
        writeFileSync(join(d, 'config.json'), '{}');
        mkdirSync(join(d, 'critic'));
        writeFileSync(join(d, 'critic', 'model.safetensors'), 'x');
      },
    });
    const files = JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8'))
      .files.map((f: { path: string }) => f.path)
      .sort();
    expect(files).toEqual(['config.json', 'critic/model.safetensors', 'trainer-state.json']);
  });
});

describe('checkpoints holding a file over 2 GiB (a sparse file: no disk used)', () => {
  it(
    'hash it by streaming (the digest equals sha256sum of as many zeros: every byte was hashed) and verify it',
    { timeout: 600_000 },
    async () => {
      // Three passes over 2 GiB (write, sha256sum, verify): ~5 s each on an idle core.
      const root = fresh();
      const size = 2 ** 31 + 4096; // past Node's 2 GiB whole-file read limit
      try {
        const dir = await writeCheckpoint(root, state(1), {
          writeModel: (d) => {
            mkdirSync(join(d, 'optimizer'));
            writeFileSync(join(d, 'optimizer', 'policy.safetensors'), '');
            truncateSync(join(d, 'optimizer', 'policy.safetensors'), size);
          },
        });
        const entry = (
          JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8')) as {
            files: { path: string; bytes: number; sha256: string }[];
          }
        ).files.find((f) => f.path === 'optimizer/policy.safetensors')!;
        expect(entry.bytes).toBe(size);
        const expected = execFileSync('sh', ['-c', `head -c ${size} /dev/zero | sha256sum`], {
          encoding: 'utf8',
        }).split(' ')[0];
        expect(entry.sha256).toBe(expected);
        expect(readCheckpoint(dir).step).toBe(1); // verifies every file by content first
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  );
});
