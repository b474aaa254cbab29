// Nothing lost, nothing silent: a new run never writes into an old one, damaged checkpoints and weights are refused by
// name, a lost optimizer state is not replaced silently, and filesystem faults are one sentence with exit code 2.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/testing.js';
import '../envs/index.js';
import { loadModel, readSafetensors, writeSafetensors } from '../model/index.js';
import { CheckpointError, UsageError } from '../util/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let run: string; // a finished 2-step run with checkpoints step-1 and step-2
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-faults-'));
  model = await writeMicroModel(join(root, 'model'));
  run = join(root, 'run');
  await train({ config: microConfig(model, run, ['trainer.keepCheckpoints=2']) });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the finished run to damage. */
function copyRun(name: string): string {
  const dir = join(root, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  for (const e of readdirSync(run, { recursive: true, withFileTypes: true })) {
    const rel = join(e.parentPath, e.name).slice(run.length + 1);
    if (e.isDirectory()) mkdirSync(join(dir, rel), { recursive: true });
    else writeFileSync(join(dir, rel), readFileSync(join(run, rel)));
  }
  return dir;
}

describe('a new run', () => {
  it('refuses a logging.runDir that holds a run, and leaves that run untouched', async () => {
    const before = readFileSync(join(run, 'metrics.jsonl'), 'utf8');
    const err = await train({ config: microConfig(model, run) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(
      /already holds a run \(config\.yaml, metrics\.jsonl, checkpoints, rollouts\); continue it with `ragen train --resume/,
    );
    expect(readFileSync(join(run, 'metrics.jsonl'), 'utf8')).toBe(before);
    expect(readdirSync(join(run, 'checkpoints')).sort()).toEqual(['step-1', 'step-2']);
  });

  it('refuses a logging.runDir that is a file, and takes an empty folder', async () => {
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(train({ config: microConfig(model, file) })).rejects.toThrow(/is a file, not a folder/);
    const empty = join(root, 'empty');
    mkdirSync(empty);
    expect((await train({ config: microConfig(model, empty, ['trainer.steps=1']) })).lastStep).toBe(1);
  });

  it('reports a bad val.jsonl before training (and before a run directory exists)', async () => {
    const data = join(root, 'mq');
    mkdirSync(data);
    writeFileSync(
      join(data, 'train.jsonl'),
      `${JSON.stringify({ query: 'What is 1 + 1?', response: 'The answer is: 2' })}\n`,
    );
    writeFileSync(join(data, 'val.jsonl'), '{"query": "x"\n');
    const dir = join(root, 'mq-run');
    const cfg = microConfig(model, dir, [
      'env.train=[{tag: MetamathQA, groups: 2, groupSize: 4}]',
      'env.val=[{tag: MetamathQA, groups: 2}]',
      `env.config.MetamathQA.dataPath=${data}`,
    ]);
    await expect(train({ config: cfg })).rejects.toThrow(/val\.jsonl:1: not valid JSON/);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('a resume', () => {
  it('names the damaged file of the newest checkpoint instead of falling back silently', async () => {
    const dir = copyRun('damaged');
    const weights = join(dir, 'checkpoints', 'step-2', 'model.safetensors');
    const bytes = readFileSync(weights);
    bytes[bytes.length - 1]! ^= 1;
    writeFileSync(weights, bytes);
    const err = await train({ resume: dir, overrides: ['trainer.steps=3'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as Error).message).toMatch(
      /step-2`: model\.safetensors does not match its SHA-256.*delete .*step-2 to resume from step 1/,
    );
  });

  it('refuses a checkpoint whose optimizer state is lost, and continues with --fresh-optimizer and a warning', async () => {
    const dir = copyRun('no-optimizer');
    const ckpt = join(dir, 'checkpoints', 'step-2');
    rmSync(join(ckpt, 'optimizer'), { recursive: true });
    const manifest = JSON.parse(readFileSync(join(ckpt, 'checkpoint.json'), 'utf8'));
    manifest.files = manifest.files.filter((f: { path: string }) => !f.path.startsWith('optimizer'));
    writeFileSync(join(ckpt, 'checkpoint.json'), JSON.stringify(manifest)); // a consistent checkpoint, just without the state
    await expect(train({ resume: dir, overrides: ['trainer.steps=3'] })).rejects.toThrow(
      /has no optimizer\/ state .*`--fresh-optimizer`/,
    );
    let printed = '';
    const stream = Object.assign(
      new (await import('node:stream')).Writable({ write: (c, _e, cb) => ((printed += String(c)), cb()) }),
      { isTTY: false },
    );
    const r = await train({
      resume: dir,
      overrides: ['trainer.steps=3', 'logging.console=plain'],
      freshOptimizer: true,
      stream,
    });
    expect(r.lastStep).toBe(3);
    expect(printed).toMatch(/warning: the checkpoint has no optimizer\/ state; AdamW starts from fresh moments/);
  });
});

describe('partial optimizer state', () => {
  /** A copy of the run whose newest checkpoint lost one role's optimizer state, with its manifest made consistent. */
  function withoutRoleState(name: string, role: string): string {
    const dir = copyRun(name);
    const ckpt = join(dir, 'checkpoints', 'step-2');
    expect(existsSync(join(ckpt, 'optimizer', `${role}.safetensors`))).toBe(true);
    rmSync(join(ckpt, 'optimizer', `${role}.safetensors`));
    const manifest = JSON.parse(readFileSync(join(ckpt, 'checkpoint.json'), 'utf8'));
    manifest.files = manifest.files.filter((f: { path: string }) => f.path !== `optimizer/${role}.safetensors`);
    writeFileSync(join(ckpt, 'checkpoint.json'), JSON.stringify(manifest));
    return dir;
  }

  it("refuses a resume when only the critic's (or only the policy's) state is gone, naming the role", async () => {
    for (const role of ['critic', 'policy']) {
      const dir = withoutRoleState(`no-${role}-state`, role);
      const err = await train({ resume: dir, overrides: ['trainer.steps=3'] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CheckpointError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `has no optimizer state for the ${role} \\(optimizer/${role}\\.safetensors\\).*\`--fresh-optimizer\``,
        ),
      );
      expect(readdirSync(join(dir, 'checkpoints')).sort()).toEqual(['step-1', 'step-2']); // nothing new written
    }
  });

  it('continues with --fresh-optimizer and a warning that names the role', async () => {
    const dir = withoutRoleState('no-critic-fresh', 'critic');
    let printed = '';
    const stream = Object.assign(
      new (await import('node:stream')).Writable({ write: (c, _e, cb) => ((printed += String(c)), cb()) }),
      { isTTY: false },
    );
    const r = await train({
      resume: dir,
      overrides: ['trainer.steps=3', 'logging.console=plain'],
      freshOptimizer: true,
      stream,
    });
    expect(r.lastStep).toBe(3);
    expect(printed).toMatch(
      /warning: the checkpoint has no optimizer state for the critic .*; AdamW starts from fresh moments/,
    );
  });
});

describe('readers of a checkpoint besides --resume (eval --run, serve)', () => {
  /** A copy of the run with one file of its newest checkpoint changed in place (the manifest left as it was). */
  function damaged(name: string, change: (ckpt: string) => void): string {
    const dir = copyRun(name);
    change(join(dir, 'checkpoints', 'step-2'));
    return dir;
  }
  const overwriteWeights = (ckpt: string) => {
    const weights = readFileSync(join(ckpt, 'model.safetensors'));
    weights.fill(0, weights.length - 64); // a tensor's last values zeroed, same size
    writeFileSync(join(ckpt, 'model.safetensors'), weights);
  };
  const editRopeTheta = (ckpt: string) => {
    const cfg = JSON.parse(readFileSync(join(ckpt, 'config.json'), 'utf8'));
    writeFileSync(join(ckpt, 'config.json'), JSON.stringify({ ...cfg, rope_theta: 12345 }, null, 2));
  };

  it('ragen eval --run refuses changed weights or an edited config.json as --resume does', async () => {
    for (const [name, change, file] of [
      ['eval-weights', overwriteWeights, 'model.safetensors'],
      ['eval-rope', editRopeTheta, 'config.json'],
    ] as const) {
      const dir = damaged(name, change);
      const r = await runCli('eval', '--run', dir, '--groups', '1');
      expect(r.code).toBe(2);
      expect(r.err).toMatch(
        new RegExp(
          `^ragen: checkpoint \`.*step-2\`: ${file.replace('.', '\\.')} (does not match its SHA-256|has \\d+ bytes)`,
        ),
      );
      expect(r.out).not.toMatch(/success/);
    }
  });

  it('ragen serve refuses them too, and a plain model directory without a manifest still loads', async () => {
    const { localServeTarget } = await import('../serve/index.js');
    const { resolveModelDir } = await import('../eval/index.js');
    const dir = damaged('serve-rope', editRopeTheta);
    await expect(localServeTarget(dir, resolveModelDir)).rejects.toThrow(
      /step-2`: config\.json (does not match its SHA-256|has \d+ bytes)/,
    );
    const plain = await localServeTarget(model, resolveModelDir);
    expect(plain.modelDir).toBe(model);
    plain.dispose();
  });
});

describe('loading weights', () => {
  it('refuses tensors the config does not use (config.json says fewer layers than the weights hold)', async () => {
    const dir = join(root, 'three-of-four');
    await writeMicroModel(dir, { numLayers: 3 });
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...cfg, num_hidden_layers: 2 }));
    await expect(loadModel(dir)).rejects.toThrow(/tensors the model does not use: model\.layers\.2\./);
  });

  it('refuses non-finite weights, naming the tensor', async () => {
    const dir = join(root, 'nan');
    await writeMicroModel(dir);
    const weights = await readSafetensors(join(dir, 'model.safetensors'));
    weights.get('model.layers.1.mlp.up_proj.weight')!.data[5] = Number.NaN;
    await writeSafetensors(join(dir, 'model.safetensors'), weights);
    await expect(loadModel(dir)).rejects.toThrow(
      /tensor `model\.layers\.1\.mlp\.up_proj\.weight` holds NaN at element 5/,
    );
  });
});

describe('filesystem faults on the command line', () => {
  it('are one sentence naming the path, with exit code 2', async () => {
    // /sys is a pseudo filesystem (refused by name); a file where a folder is needed is ENOTDIR.
    for (const [dir, reason] of [
      ['/sys/ragen-run', /is under `\/sys`, a sysfs pseudo filesystem/],
      [join(root, 'a-file', 'run'), /: .* \(ENOTDIR\); /],
    ] as const) {
      const r = await runCli(
        'train',
        '--config',
        'bandit-ppo',
        `model.path=${model}`,
        `logging.runDir=${dir}`,
        'trainer.steps=1',
        'logging.console=none',
      );
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/^ragen: could not create the run directory: `/);
      expect(r.err).toMatch(reason);
      expect(r.err).not.toMatch(/\n\s+at /); // no stack
    }
  });
});
