// Issue 34, items 4-6: a checkpoint is exactly its manifest. Every reader of a run (--resume, eval --run, serve,
// probe-grads, the dashboard's play) loads only the files checkpoint.json lists, names a damaged newest step instead of
// falling back to an older one, and refuses a manifest without SHA-256 digests unless --allow-unverified-checkpoint.
// A LoRA run's adapter-only checkpoint also refuses a base model changed since it was written.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/testing.js';
import '../envs/index.js';
import { CheckpointError } from '../util/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let run: string; // a finished 2-step run whose checkpoints step-1 and step-2 hold sharded weights and optimizer state
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-exact-'));
  model = await writeMicroModel(join(root, 'model'));
  run = join(root, 'run');
  await train({ config: microConfig(model, run, ['trainer.keepCheckpoints=2', 'trainer.checkpointShardBytes=8192']) });
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * A copy of the finished run (in its own folder, so a dashboard over that folder sees it alone) with `change` applied
 * to its step-2.
 */
function copyRun(name: string, change: (step2: string) => void = () => {}): string {
  const dir = join(root, name, 'run');
  rmSync(dirname(dir), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const e of readdirSync(run, { recursive: true, withFileTypes: true })) {
    const rel = join(e.parentPath, e.name).slice(run.length + 1);
    if (e.isDirectory()) mkdirSync(join(dir, rel), { recursive: true });
    else writeFileSync(join(dir, rel), readFileSync(join(run, rel)));
  }
  change(join(dir, 'checkpoints', 'step-2'));
  return dir;
}

const resumeError = async (dir: string, extra: { allowUnverifiedCheckpoint?: boolean } = {}) =>
  train({ resume: dir, overrides: ['trainer.steps=3'], ...extra }).catch((e: unknown) => e);

/** GET `path` of a dashboard over the folder holding `dir`; status and body. */
async function dashboardGet(
  dir: string,
  path: string,
  opts: { allowUnverifiedCheckpoint?: boolean } = {},
): Promise<{ status: number; body: string }> {
  const { startDashboard } = await import('../dashboard/index.js');
  const dash = await startDashboard({ roots: [dirname(dir)], ...opts });
  try {
    const res = await fetch(`${dash.url.replace(/\/$/, '')}/api/file?id=0/run&path=${encodeURIComponent(path)}`);
    return {
      status: res.status,
      body: res.status === 200 ? `${(await res.arrayBuffer()).byteLength} bytes` : await res.text(),
    };
  } finally {
    await dash.close();
  }
}

describe('item 4: a checkpoint loads only the files its manifest lists', () => {
  it('item 4: a model.safetensors copied next to a sharded index is refused by name by eval --run, serve, --resume and the dashboard', async () => {
    const dir = copyRun('extra-model', (step2) =>
      copyFileSync(join(model, 'model.safetensors'), join(step2, 'model.safetensors')),
    );
    const named = /step-2`.*: `model\.safetensors` is not listed in its checkpoint\.json/;

    const e = await runCli('eval', '--run', dir, '--groups', '1');
    expect(e.code, e.err).toBe(2);
    expect(e.err).toMatch(named);
    expect(e.out).not.toMatch(/success/);

    const { localServeTarget } = await import('../serve/index.js');
    const { resolveModelDir } = await import('../eval/index.js');
    await expect(localServeTarget(dir, resolveModelDir)).rejects.toThrow(named);

    const r = await resumeError(dir);
    expect(r).toBeInstanceOf(CheckpointError);
    expect((r as Error).message).toMatch(named);
    expect(readdirSync(join(dir, 'checkpoints')).sort()).toEqual(['step-1', 'step-2']); // nothing trained

    const d = await dashboardGet(dir, 'checkpoints/step-2/model.safetensors');
    expect(d.status, d.body).toBe(409);
    expect(d.body).toMatch(named);
  });

  it('item 4: an unlisted critic/model.safetensors, optimizer/policy.safetensors or adapter/adapter_config.json is refused by name', async () => {
    const extras: [string, (step2: string) => void][] = [
      [
        'critic/model.safetensors',
        (s) => copyFileSync(join(model, 'model.safetensors'), join(s, 'critic', 'model.safetensors')),
      ],
      [
        'optimizer/policy.safetensors',
        (s) => copyFileSync(join(model, 'model.safetensors'), join(s, 'optimizer', 'policy.safetensors')),
      ],
      [
        'adapter/adapter_config.json',
        (s) => {
          mkdirSync(join(s, 'adapter'));
          writeFileSync(
            join(s, 'adapter', 'adapter_config.json'),
            JSON.stringify({
              peft_type: 'LORA',
              r: 2,
              lora_alpha: 4,
              target_modules: ['q_proj'],
              base_model_name_or_path: '..',
            }),
          );
        },
      ],
    ];
    for (const [file, add] of extras) {
      const dir = copyRun(`extra-${file.replace(/\W/g, '-')}`, add);
      const r = await resumeError(dir);
      expect(r, file).toBeInstanceOf(CheckpointError);
      expect((r as Error).message).toMatch(
        new RegExp(`step-2\`.*: \`${file.replace(/\./g, '\\.')}\` is not listed in its checkpoint\\.json`),
      );
      const e = await runCli('eval', '--run', dir, '--groups', '1');
      expect(e.code, file).toBe(2);
      expect(e.err).toContain(`\`${file}\` is not listed`);
    }
  });
});

describe("item 4: a fresh run that starts from another run's checkpoint (model.path) verifies it the same way", () => {
  it('item 4: an unlisted model.safetensors in the checkpoint model.path names is refused before training', async () => {
    const dir = copyRun('from-checkpoint', (step2) =>
      copyFileSync(join(model, 'model.safetensors'), join(step2, 'model.safetensors')),
    );
    const err = await train({
      config: microConfig(join(dir, 'checkpoints', 'step-2'), join(root, 'from-checkpoint', 'next')),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as Error).message).toMatch(
      /step-2`: `model\.safetensors` is not listed in its checkpoint\.json .*; move it out of the checkpoint\.$/,
    );
  });
});

describe('item 4: probe-grads --step 0 verifies the initial model when it is a checkpoint', () => {
  it('item 4: a run whose model.path is a checkpoint with an unlisted file is refused by probe-grads --step 0', async () => {
    const base = copyRun('probe-base', (step2) =>
      copyFileSync(join(model, 'model.safetensors'), join(step2, 'model.safetensors')),
    );
    const dir = copyRun('probe-from');
    const cfg = join(dir, 'config.yaml');
    writeFileSync(
      cfg,
      readFileSync(cfg, 'utf8').replace(`path: ${model}`, `path: ${join(base, 'checkpoints', 'step-2')}`),
    );
    expect(readFileSync(cfg, 'utf8')).toContain(join(base, 'checkpoints', 'step-2'));
    const p = await runCli('probe-grads', '--run', dir, '--step', '0', '--groups', '1');
    expect(p.code, p.err).toBe(2);
    expect(p.err).toMatch(/step-2`: `model\.safetensors` is not listed in its checkpoint\.json/);
  });
});

describe('item 5: a damaged newest checkpoint is named, never skipped', () => {
  it('item 5: a newest step missing its config.json is refused by eval --run and serve, naming the step and both ways out', async () => {
    const dir = copyRun('no-config', (step2) => rmSync(join(step2, 'config.json')));
    const step1 = join(dir, 'checkpoints', 'step-1');
    const e = await runCli('eval', '--run', dir, '--groups', '1');
    expect(e.code, e.err).toBe(2);
    expect(e.err).toMatch(
      /step-2`: config\.json is missing \(listed in checkpoint\.json\); it is the newest checkpoint of `.*` and is not skipped for an older one: /,
    );
    expect(e.err).toContain(`give \`${step1}\``);
    expect(e.err).toContain(`or delete \`${join(dir, 'checkpoints', 'step-2')}\``);
    expect(e.out).not.toMatch(/success/);

    const { localServeTarget } = await import('../serve/index.js');
    const { resolveModelDir } = await import('../eval/index.js');
    await expect(localServeTarget(dir, resolveModelDir)).rejects.toThrow(/step-2`.*: config\.json is missing/);

    // The way out the message gives works: the step before, named explicitly.
    const ok = await runCli('eval', '--run', step1, '--groups', '1', '--json');
    expect(ok.code, ok.err).toBe(0);
    expect(ok.err).toContain(`checkpoint \`${step1}\``);
  });

  it('item 5: a newest step without its checkpoint.json is named as well (probe-grads included)', async () => {
    const dir = copyRun('no-manifest', (step2) => rmSync(join(step2, 'checkpoint.json')));
    const e = await runCli('eval', '--run', dir, '--groups', '1');
    expect(e.code, e.err).toBe(2);
    expect(e.err).toMatch(/step-2`.*: its checkpoint\.json is missing, so it is not a complete checkpoint/);
    const p = await runCli('probe-grads', '--run', dir, '--groups', '1');
    expect(p.code, p.err).toBe(2);
    expect(p.err).toMatch(/step-2`.*: its checkpoint\.json is missing, so it is not a complete checkpoint/);
  });

  it('item 5: eval --run says on stderr which step it uses', async () => {
    const e = await runCli('eval', '--run', run, '--groups', '1', '--json');
    expect(e.code, e.err).toBe(0);
    expect(e.err).toContain(`using checkpoint step 2 of \`${run}\` (\`${join(run, 'checkpoints', 'step-2')}\`)`);
  });

  it('item 5: ragen serve of a run says which step it serves before it listens', { timeout: 60_000 }, async () => {
    const script = `const { main } = await import(${JSON.stringify(resolve('src/cli/main.ts'))}); process.exitCode = await main(${JSON.stringify(['serve', run, '--port', '0'])});`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    try {
      await new Promise<void>((done, fail) => {
        child.stderr.on('data', (c: Buffer) => {
          err += String(c);
          if (/Serving/.test(err)) done();
        });
        child.on('exit', (code) => fail(new Error(`serve exited with ${code}: ${err}`)));
      });
    } finally {
      child.kill('SIGTERM');
    }
    expect(err).toContain(`using checkpoint step 2 of \`${run}\``);
    expect(err.indexOf('using checkpoint step 2')).toBeLessThan(err.indexOf('Serving'));
  });
});

describe('item 6: a manifest without SHA-256 digests is refused unless --allow-unverified-checkpoint', () => {
  /** step-2's manifest without its digests (the version-1 format) and a byte of a weight shard flipped (same size). */
  const unverified = (step2: string) => {
    const manifest = JSON.parse(readFileSync(join(step2, 'checkpoint.json'), 'utf8')) as {
      version: number;
      files: { path: string; sha256?: string }[];
    };
    manifest.version = 1;
    for (const f of manifest.files) delete f.sha256;
    writeFileSync(join(step2, 'checkpoint.json'), JSON.stringify(manifest));
    const shard = readdirSync(step2).find((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f))!;
    const bytes = readFileSync(join(step2, shard));
    bytes[bytes.length - 1]! ^= 1;
    writeFileSync(join(step2, shard), bytes);
  };
  const refusal = /step-2`: its checkpoint\.json records no SHA-256 .*--allow-unverified-checkpoint/;

  it('item 6: resume, eval --run, serve, probe-grads and dashboard play all refuse it, naming the flag', async () => {
    const dir = copyRun('v1', unverified);
    const r = await resumeError(dir);
    expect(r).toBeInstanceOf(CheckpointError);
    expect((r as Error).message).toMatch(refusal);

    const e = await runCli('eval', '--run', dir, '--groups', '1');
    expect(e.code, e.err).toBe(2);
    expect(e.err).toMatch(refusal);

    const s = await runCli('serve', dir, '--port', '0');
    expect(s.code, s.err).toBe(2);
    expect(s.err).toMatch(refusal);

    const p = await runCli('probe-grads', '--run', dir, '--groups', '1');
    expect(p.code, p.err).toBe(2);
    expect(p.err).toMatch(refusal);

    const d = await dashboardGet(dir, 'checkpoints/step-2/config.json');
    expect(d.status).toBe(409);
    expect(d.body).toMatch(refusal);
  });

  it('item 6: with --allow-unverified-checkpoint each reader accepts it on sizes alone and says so', async () => {
    const dir = copyRun('v1-allowed', unverified);
    const e = await runCli('eval', '--run', dir, '--groups', '1', '--json', '--allow-unverified-checkpoint');
    expect(e.code, e.err).toBe(0);
    expect(e.err).toMatch(/warning: .*step-2.* checked by size only/);

    const { localServeTarget } = await import('../serve/index.js');
    const { resolveModelDir } = await import('../eval/index.js');
    const t = await localServeTarget(dir, (d) => resolveModelDir(d, { allowUnverified: true }));
    expect(t.modelDir).toBe(join(dir, 'checkpoints', 'step-2'));
    t.dispose();

    expect(
      (await dashboardGet(dir, 'checkpoints/step-2/config.json', { allowUnverifiedCheckpoint: true })).status,
    ).toBe(200);
    for (const cmd of [
      ['serve', dir],
      ['probe-grads', '--run', dir],
      ['train', '--resume', dir],
      ['dashboard', dir],
    ]) {
      expect((await runCli(...cmd, '--help')).out, cmd[0]).toContain('--allow-unverified-checkpoint');
    }
    const resumed = await train({ resume: dir, overrides: ['trainer.steps=3'], allowUnverifiedCheckpoint: true });
    expect(resumed.lastStep).toBe(3);
  });
});

describe("a LoRA run's checkpoint records the base it names (its manifest's `base`)", () => {
  it('a base changed in place after the checkpoint was written is refused by --resume and eval --run, naming the file and the fix', async () => {
    const base = await writeMicroModel(join(root, 'lora-base'));
    const lora = join(root, 'lora-run');
    await train({ config: microConfig(base, lora, ['trainer.steps=1', 'model.lora.rank=4', 'model.lora.alpha=8']) });
    const step1 = join(lora, 'checkpoints', 'step-1');
    expect(readdirSync(step1).filter((f) => f.startsWith('model'))).toEqual([]); // adapter-only: the base is named

    const weights = join(base, 'model.safetensors');
    const bytes = readFileSync(weights);
    bytes[bytes.length - 1]! ^= 1; // one byte of the last tensor: the file still loads, as other weights
    writeFileSync(weights, bytes);
    const named = new RegExp(
      `base model \`${resolve(base)}\`, and its model\\.safetensors does not match its SHA-256 in checkpoint\\.json: the base changed since the checkpoint was written; put the base model the adapter was trained on back at`,
    );
    const r = await train({ resume: lora, overrides: ['trainer.steps=2'] }).catch((e: unknown) => e);
    expect(r).toBeInstanceOf(CheckpointError);
    expect((r as Error).message).toMatch(named);
    expect((r as Error).message).not.toMatch(/older|earlier step/); // every step of the run names the same base
    const e = await runCli('eval', '--run', lora, '--groups', '1');
    expect(e.code, e.err).toBe(2);
    expect(e.err).toMatch(named);
  }, 120_000);
});
