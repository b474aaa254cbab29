// The torch worker's failure modes: garbage on stdout, a hang past the timeout, kill -9 mid-request, a Python
// exception, and the parent dying (the worker must not outlive it). Each must end in a clear error, never a hang.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RagenError } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { TorchRequestError, TorchWorker } from './torch-worker.js';
import { runWorkerPython, torchPythonForTests } from './torch-testing.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

/** JavaScript that writes a valid handshake frame on stdout. */
const GREET =
  `{const h=Buffer.from(JSON.stringify({type:'hello',ok:true,protocol:1,torch:'fake',cuda:null,device:'cpu',deviceName:'cpu',precision:'float32',pid:process.pid,buffers:[]}));` +
  `const p=Buffer.alloc(16);p.write('RGT1',0,'latin1');p.writeUInt32LE(h.length,4);p.writeBigUInt64LE(0n,8);process.stdout.write(Buffer.concat([p,h]));}`;

/** A node one-liner standing in for the worker: it sends a valid handshake frame first when `hello` is set. */
function fake(body: string, hello = true): string[] {
  return [process.execPath, '-e', (hello ? GREET : '') + body];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !alive(pid);
}

describe('TorchWorker failures', () => {
  it('rejects a worker that prints garbage on stdout, quoting it', async () => {
    const start = TorchWorker.start({
      python: 'unused',
      command: fake(`console.log('Loading weights... done'); setInterval(() => {}, 1000);`, false),
      echoStderr: false,
    });
    await expect(start).rejects.toThrow(/not a protocol frame.*Loading weights/);
  });

  it('fails a request that runs past its timeout and stops the worker', async () => {
    const w = await TorchWorker.start({
      python: 'unused',
      command: fake(`process.stdin.on('data', () => {}); setInterval(() => {}, 1000);`),
      echoStderr: false,
    });
    const t0 = Date.now();
    await expect(w.request('forward', {}, {}, 0.5)).rejects.toThrow(/forward ran past its timeout of 0.5 s/);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(await waitGone(w.pid, 3000)).toBe(true);
    await expect(w.request('forward')).rejects.toThrow(/timeout/); // later requests fail at once
  });

  it('reports the exit code and the last stderr lines of a worker that dies', async () => {
    const w = await TorchWorker.start({
      python: 'unused',
      command: fake(
        `process.stdin.on('data', () => { console.error('CUDA error: an illegal memory access'); setTimeout(() => process.exit(3), 50); });`,
      ),
      echoStderr: false,
    });
    await expect(w.request('generate')).rejects.toThrow(
      /exited with code 3[\s\S]*illegal memory access[\s\S]*generate/,
    );
  });

  it("names every rank of torchrun's failure summary, whichever it lists as the root cause, in chunks cut mid-line", async () => {
    const summary = [
      'Failures:',
      '[1]:',
      '  rank      : 1 (local_rank: 1)',
      '  exitcode  : -9 (pid: 4242)',
      '  traceback : Signal 9 (SIGKILL) received by PID 4242',
      'Root Cause (first observed failure):',
      '[0]:',
      '  rank      : 0 (local_rank: 0)',
      '  exitcode  : 1 (pid: 4241)',
      '  traceback : To enable traceback see: ...',
      '='.repeat(40),
      'Traceback (most recent call last):',
      '    run(args)',
      '    ^^^^^^^^^',
      'RuntimeError: gloo connection closed',
    ].join('\n');
    const halves = [summary.slice(0, 50), summary.slice(50)];
    const w = await TorchWorker.start({
      python: 'unused',
      command: fake(
        `process.stdin.on('data', () => { process.stderr.write(${JSON.stringify(halves[0])}); setTimeout(() => { process.stderr.write(${JSON.stringify(halves[1] + '\n')}); setTimeout(() => process.exit(1), 50); }, 50); });`,
      ),
      echoStderr: false,
    });
    const e = (await w.request('forward').then(
      () => new Error('the request succeeded'),
      (x: unknown) => x,
    )) as Error;
    expect(e.message).toMatch(
      /exited with code 1\. torchrun reports: rank 1 \(pid 4242\) was killed by signal 9 \(SIGKILL[^)]*\); rank 0 \(pid 4241\) exited with code 1\./,
    );
    expect(e.message, "Python's ^^^ underlines stay out of the tail").not.toMatch(/\^\^\^/);
    expect(e, 'the CLI prints RagenErrors as one message, not a stack').toBeInstanceOf(RagenError);
  });

  it("names the first Python error a rank printed even when torchrun's summary fills the tail", async () => {
    const rank = [
      'Traceback (most recent call last):',
      '  File "worker.py", line 9, in main',
      'RuntimeError: RAGEN_TORCH_FSDP=all: torch 2.6 cannot run FSDP2 on CPU ranks',
    ];
    const summary = Array.from({ length: 14 }, (_, i) => `  summary line ${i}`).concat(
      'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: worker.py FAILED',
    );
    const w = await TorchWorker.start({
      python: 'unused',
      command: fake(
        `process.stdin.on('data', () => { console.error(${JSON.stringify([...rank, ...summary].join('\n'))}); setTimeout(() => process.exit(1), 50); });`,
      ),
      echoStderr: false,
    });
    const e = (await w.request('forward').then(
      () => new Error('the request succeeded'),
      (x: unknown) => x,
    )) as Error;
    expect(e.message).toMatch(
      /exited with code 1\. The first error it printed: RuntimeError: RAGEN_TORCH_FSDP=all: torch 2\.6 cannot run FSDP2 on CPU ranks Last stderr lines:/,
    );
    expect(e.message.match(/cannot run FSDP2/g), 'said once').toHaveLength(1);
  });

  it('does not name an error printed before the worker last answered', async () => {
    const w = await TorchWorker.start({
      python: 'unused',
      command: fake(
        `console.error('ValueError: an old, handled one'); setTimeout(() => ${GREET}, 200); process.stdin.on('data', () => { console.error('RuntimeError: the new one'); for (let i = 0; i < 14; i++) console.error('  summary ' + i); setTimeout(() => process.exit(1), 50); });`,
        false,
      ),
      echoStderr: false,
    });
    const e = (await w.request('forward').then(
      () => new Error('the request succeeded'),
      (x: unknown) => x,
    )) as Error;
    expect(e.message).toMatch(/The first error it printed: RuntimeError: the new one/);
    expect(e.message).not.toMatch(/old, handled/);
  });
});

describe.skipIf(!python)('TorchWorker failures (real worker)', () => {
  it('turns a Python exception into an error naming its type and message, and keeps serving', async () => {
    const engine = await TorchEngine.fromPretrained(TINY, { python: python!, echoStderr: false });
    try {
      const batch = {
        B: 1,
        T: 3,
        ids: Int32Array.from([1, 2, 3]),
        attentionMask: Uint8Array.from([1, 1, 1]),
        lengths: Int32Array.from([3]),
      };
      const err = await engine.forward(batch, { role: 'reference' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TorchRequestError);
      expect((err as Error).message).toMatch(
        /forward failed: ValueError: this engine has no reference model[\s\S]*roles\.py/,
      );
      expect((await engine.forward(batch, { role: 'policy' })).logprobs.length).toBe(3);
      // Bad input is named before it reaches torch.
      await expect(
        engine.forward({ ...batch, ids: Int32Array.from([1, 5000, 3]) }, { role: 'policy' }),
      ).rejects.toThrow(/batch row 0 holds token id 5000, outside the vocabulary \[0, 1024\)/);
      await expect(engine.generate([[1, 2]], { maxNewTokens: 4, temperature: -1, seed: 0 })).rejects.toThrow(
        /temperature must be >= 0/,
      );
      engine.zeroGrad('critic'); // not awaited (void in the seam): its error comes with a later request, once
      await new Promise((r) => setTimeout(r, 500));
      await expect(engine.forward(batch, { role: 'policy' })).rejects.toThrow(
        /zero_grad failed: ValueError: this engine has no critic/,
      );
      expect((await engine.forward(batch, { role: 'policy' })).logprobs.length).toBe(3);
    } finally {
      engine.dispose();
    }
  }, 30_000);

  it('reports kill -9 during a request with the signal, and fails later requests at once', async () => {
    const engine = await TorchEngine.fromPretrained(TINY, { python: python!, echoStderr: false });
    const prompts = Array.from({ length: 16 }, () => [1, 2, 3]);
    const gen = engine.generate(prompts, { maxNewTokens: 900, temperature: 1, seed: 0 });
    setTimeout(() => process.kill(engine.pid, 'SIGKILL'), 300);
    await expect(gen).rejects.toThrow(/killed by signal SIGKILL[\s\S]*generate/);
    await expect(engine.generate(prompts, { maxNewTokens: 1, temperature: 0, seed: 0 })).rejects.toThrow(/SIGKILL/);
    engine.dispose();
  }, 30_000);

  it('does not outlive a parent that is killed with SIGKILL', async () => {
    // The parent: a node process that starts a worker, prints its pid and waits.
    const script = `import { TorchWorker } from ${JSON.stringify(join(import.meta.dirname, 'torch-worker.ts'))};
const w = await TorchWorker.start({ python: ${JSON.stringify(python)}, device: 'cpu' });
console.log('PID ' + w.pid); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      let out = '';
      parent.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /PID (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      parent.on('exit', (code) => reject(new Error(`parent exited early (${code}): ${out}`)));
    });
    expect(alive(pid)).toBe(true);
    parent.kill('SIGKILL');
    expect(await waitGone(pid, 5000), `worker ${pid} still running after its parent was killed`).toBe(true);
  }, 30_000);

  it('names what is wrong with bad input: no config.json, an architecture it lacks, a device the machine lacks, an unknown precision', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'ragen-torch-bad-'));
    await expect(TorchEngine.fromPretrained(empty, { python: python! })).rejects.toThrow(/config\.json is missing/);
    writeFileSync(
      join(empty, 'config.json'),
      JSON.stringify({
        model_type: 'gpt2',
        architectures: ['GPT2LMHeadModel'],
        vocab_size: 10,
        hidden_size: 8,
        intermediate_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
      }),
    );
    await expect(
      TorchEngine.fromPretrained(empty, { python: python!, device: 'cpu', echoStderr: false }),
    ).rejects.toThrow(
      /load failed: CheckpointError: .*model_type `gpt2` \(architectures \['GPT2LMHeadModel'\]\) is not supported.*supported: qwen2, qwen3, llama/,
    );
    await expect(
      TorchWorker.start({ python: python!, device: 'cpu', precision: 'float16', echoStderr: false }),
    ).rejects.toThrow(/precision must be auto, float32 or bfloat16, got `float16`/);
    const cuda = await TorchWorker.start({ python: python!, device: 'cuda', echoStderr: false }).then(
      (w) => {
        w.close(0);
        return w.info.device;
      },
      (e: Error) => e.message,
    );
    expect(cuda).toMatch(/^cuda|torch .* sees no CUDA GPU.*use device cpu/);
  }, 60_000);

  it("names the reference BLAS among the libraries torch mapped (Debian's python3-torch without OpenBLAS), and not OpenBLAS or MKL", () => {
    const lines = {
      reference: '7f1c2a000000-7f1c2a0a0000 r-xp 00012000 fe:01 123 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.12.1',
      openblas:
        '7f1c2a000000-7f1c2a0a0000 r-xp 00012000 fe:01 123 /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3',
      mkl: '7f1c2a000000-7f1c2a0a0000 r-xp 00012000 fe:01 123 /venv/lib/python3.12/site-packages/torch/lib/libmkl_core.so',
      anonymous: '7f1c2a000000-7f1c2a0a0000 rw-p 00000000 00:00 0',
    };
    const script =
      'import json, sys\nfrom ragen_torch.worker import reference_blas\nprint(json.dumps({k: reference_blas(v) for k, v in json.loads(sys.argv[1]).items()}))';
    const r = runWorkerPython(python!, ['-c', script, JSON.stringify(lines)]);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      reference: '/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.12.1',
      openblas: null,
      mkl: null,
      anonymous: null,
    });
  }, 30_000);

  it('gives the same outputs and gradients with a small token budget (many chunks) and gradient checkpointing as without', async () => {
    const batch = sequenceBatch([
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      [11, 12, 13],
      [14, 15, 16, 17, 18, 19],
      [20, 21],
    ]);
    const lora = { r: 4, alpha: 8 };
    const small = await TorchEngine.fromPretrained(TINY, {
      python: python!,
      tokenBudget: 16,
      gradientCheckpointing: true,
      critic: 'shared',
      lora,
      seed: 3,
      echoStderr: false,
    });
    const big = await TorchEngine.fromPretrained(TINY, {
      python: python!,
      critic: 'shared',
      lora,
      seed: 3,
      echoStderr: false,
    });
    try {
      for (const e of [small, big])
        await e.backward(batch, { role: 'policy', values: true }, (o) => ({
          logprobs: o.logprobs.map((_, i) => Math.sin(i)),
          values: o.values!.map((_, i) => Math.cos(i)),
        }));
      const [gs, gb] = [await small.tensors('policy', 'grad'), await big.tensors('policy', 'grad')];
      for (const [n, g] of gb) {
        const scale = g.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
        gs.get(n)!.forEach((x, i) => expect(Math.abs(x - g[i]!), n).toBeLessThanOrEqual(1e-4 * scale + 1e-8));
      }
      for (const role of ['policy', 'critic'] as const) {
        const [a, b] = [
          await small.forward(batch, { role, entropy: true }),
          await big.forward(batch, { role, entropy: true }),
        ];
        for (const k of ['logprobs', 'entropy', 'values'] as const) {
          if (!b[k]) continue;
          expect(a[k]!.length).toBe(b[k]!.length);
          a[k]!.forEach((x, i) => expect(Math.abs(x - b[k]![i]!), `${role} ${k}[${i}]`).toBeLessThan(1e-5));
        }
      }
    } finally {
      small.dispose();
      big.dispose();
    }
  }, 60_000);
});
