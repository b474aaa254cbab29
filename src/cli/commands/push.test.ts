// `ragen push` against a local stand-in of the Hub's upload API (the endpoints @huggingface/hub calls: repo info,
// repo creation, preupload, the Git LFS batch and upload, the commit): the repository ends up holding the checkpoint's
// model files byte for byte, the run's config and metrics, and a model card whose numbers are the run's.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, saveConfig } from '../../config/index.js';
import { writeCheckpoint } from '../../train/checkpoint-io.js';
import { packageRoot } from '../../util/index.js';
import { push } from './push.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-push-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const MODEL_FILES = [
  'config.json',
  'generation_config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
];
const TOKEN = 'hf_test_write_token';

/**
 * A run with validation success 0.25 at step 0 and 0.5 at step 2, and its checkpoint step-2 (model: ragen-tiny); with
 * `loraOver`, a LoRA run's checkpoint: an adapter naming that base directory and no weights of its own.
 */
async function writeRun(name: string, loraOver?: string): Promise<string> {
  const run = join(tmp, name);
  mkdirSync(run, { recursive: true });
  saveConfig(loadConfig({ config: 'sokoban-ppo' }), run);
  const rows = [
    { step: 0, 'val/SimpleSokoban/success': 0.25, 'val/success': 0.25 },
    { step: 1, 'actor/pg_loss': 0.1 },
    { step: 2, 'val/SimpleSokoban/success': 0.5, 'val/success': 0.5 },
  ];
  writeFileSync(join(run, 'metrics.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  await writeCheckpoint(
    join(run, 'checkpoints'),
    { step: 2, data: {} },
    {
      writeModel: (dir) => {
        for (const f of MODEL_FILES)
          if (!(loraOver && f === 'model.safetensors'))
            copyFileSync(join(packageRoot(), 'models', 'ragen-tiny', f), join(dir, f));
        if (loraOver) {
          mkdirSync(join(dir, 'adapter'));
          const peft = { peft_type: 'LORA', r: 2, lora_alpha: 4, base_model_name_or_path: loraOver };
          writeFileSync(join(dir, 'adapter', 'adapter_config.json'), JSON.stringify(peft));
          writeFileSync(join(dir, 'adapter', 'adapter_model.safetensors'), 'adapter weights');
        }
        mkdirSync(join(dir, 'optimizer'));
        writeFileSync(join(dir, 'optimizer', 'policy.safetensors'), 'moments');
      },
      metricsFile: join(run, 'metrics.jsonl'),
    },
  );
  return run;
}

/** The Hub's upload API, keeping each repository's files in memory. */
class HubStandIn {
  repos = new Map<string, Map<string, Buffer>>();
  lfs = new Map<string, Buffer>();
  requests: string[] = [];
  tokens: string[] = [];
  server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(
        ({ status, body }) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        },
        (err: Error) => {
          res.writeHead(500);
          res.end(JSON.stringify({ error: err.message }));
        },
      );
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = new URL(req.url!, this.url).pathname;
    this.requests.push(`${req.method} ${path}`);
    if (!path.startsWith('/lfs/')) this.tokens.push(req.headers.authorization ?? '');
    if (req.headers.authorization !== `Bearer ${TOKEN}` && !path.startsWith('/lfs/'))
      return { status: 401, body: { error: 'Invalid credentials in Authorization header' } };
    let m: RegExpExecArray | null;
    if (req.method === 'GET' && (m = /^\/api\/models\/([^/]+\/[^/]+)$/.exec(path)))
      return this.repos.has(m[1]!)
        ? { status: 200, body: { id: m[1] } }
        : { status: 404, body: { error: 'not found' } };
    if (req.method === 'POST' && path === '/api/repos/create') {
      const { name, organization } = JSON.parse(body.toString()) as { name: string; organization?: string };
      const id = `${organization ?? 'me'}/${name}`;
      this.repos.set(id, new Map());
      return { status: 200, body: { url: `${this.url}/${id}`, name: id } };
    }
    if (req.method === 'POST' && (m = /^\/api\/models\/([^/]+\/[^/]+)\/preupload\/main$/.exec(path))) {
      const { files } = JSON.parse(body.toString()) as { files: { path: string }[] };
      const mode = (p: string) => (p.endsWith('.safetensors') ? 'lfs' : 'regular');
      return { status: 200, body: { files: files.map((f) => ({ path: f.path, uploadMode: mode(f.path) })) } };
    }
    if (req.method === 'POST' && /^\/[^/]+\/[^/]+\.git\/info\/lfs\/objects\/batch$/.test(path)) {
      const { objects } = JSON.parse(body.toString()) as { objects: { oid: string; size: number }[] };
      const actions = (oid: string) => ({ upload: { href: `${this.url}/lfs/${oid}` } });
      return {
        status: 200,
        body: { transfer: 'basic', objects: objects.map((o) => ({ ...o, actions: actions(o.oid) })) },
      };
    }
    if (req.method === 'PUT' && (m = /^\/lfs\/([0-9a-f]{64})$/.exec(path))) {
      if (createHash('sha256').update(body).digest('hex') !== m[1]) return { status: 400, body: { error: 'bad oid' } };
      this.lfs.set(m[1]!, body);
      return { status: 200, body: {} };
    }
    if (req.method === 'POST' && (m = /^\/api\/models\/([^/]+\/[^/]+)\/commit\/main$/.exec(path))) {
      const repo = this.repos.get(m[1]!);
      if (!repo) return { status: 404, body: { error: 'no such repo' } };
      for (const line of body.toString().split('\n')) {
        const { key, value } = JSON.parse(line) as { key: string; value: Record<string, string> };
        if (key === 'file') repo.set(value.path!, Buffer.from(value.content!, 'base64'));
        if (key === 'lfsFile') repo.set(value.path!, this.lfs.get(value.oid!)!);
      }
      return { status: 200, body: { commitOid: 'c'.repeat(40), commitUrl: `${this.url}/${m[1]}/commit/ccc` } };
    }
    return { status: 404, body: { error: `unknown ${req.method} ${path}` } };
  }
}

describe('ragen push', () => {
  const hub = new HubStandIn();
  const said: string[] = [];
  const say = (line: string) => void said.push(line);
  beforeAll(() => hub.start());
  afterAll(() => new Promise((r) => hub.server.close(r)));
  beforeEach(() => {
    process.env.HF_TOKEN = TOKEN;
    hub.requests = [];
    said.length = 0;
  });
  afterAll(() => void delete process.env.HF_TOKEN);

  it('creates the repository and uploads the model files byte for byte, the run files and a card', async () => {
    const run = await writeRun('run-a');
    await push(run, { repo: 'me/sokoban-agent', hubUrl: hub.url }, say);
    const repo = hub.repos.get('me/sokoban-agent')!;
    expect([...repo.keys()].sort()).toEqual(
      [...MODEL_FILES, 'README.md', 'ragen/config.yaml', 'ragen/metrics.jsonl'].sort(),
    );
    const step = join(run, 'checkpoints', 'step-2');
    for (const f of MODEL_FILES) expect(repo.get(f)!.equals(readFileSync(join(step, f))), f).toBe(true);
    expect(repo.get('ragen/config.yaml')!.equals(readFileSync(join(run, 'config.yaml')))).toBe(true);
    // the weights went through Git LFS, as the stand-in asked; the optimizer and trainer state stayed behind
    expect(hub.requests.some((r) => r.startsWith('PUT /lfs/'))).toBe(true);
    expect(hub.requests).toContain('POST /api/repos/create');
    const card = repo.get('README.md')!.toString();
    expect(card).toContain('| SimpleSokoban | 25.0% | 50.0% |');
    expect(card).toMatch(/^---\n[\s\S]*library_name: transformers[\s\S]*\n---\n/);
    expect(card).toContain('from `ragen-tiny`: step 2 of');
    expect(card).toContain(readFileSync(join(run, 'config.yaml'), 'utf8').trimEnd());
    expect(hub.tokens.every((t) => t === `Bearer ${TOKEN}`)).toBe(true);
    expect(said.at(-1)).toMatch(/^created and uploaded 8 files: /);
  });

  it("a LoRA run's checkpoint goes up with the base weights its adapter names, the adapter's base the repository", async () => {
    const base = join(packageRoot(), 'models', 'ragen-tiny');
    const run = await writeRun('run-lora', base);
    await push(run, { repo: 'me/lora-agent', hubUrl: hub.url }, say);
    const repo = hub.repos.get('me/lora-agent')!;
    expect([...repo.keys()].filter((f) => !f.startsWith('ragen/') && f !== 'README.md').sort()).toEqual(
      [...MODEL_FILES, 'adapter/adapter_config.json', 'adapter/adapter_model.safetensors'].sort(),
    );
    expect(repo.get('model.safetensors')!.equals(readFileSync(join(base, 'model.safetensors')))).toBe(true);
    const peft = JSON.parse(repo.get('adapter/adapter_config.json')!.toString());
    expect(peft).toEqual({ peft_type: 'LORA', r: 2, lora_alpha: 4, base_model_name_or_path: '..' });
    expect(repo.get('adapter/adapter_model.safetensors')!.toString()).toBe('adapter weights');
  });

  it('updates an existing repository without creating it again', async () => {
    const run = await writeRun('run-b');
    hub.repos.set('me/existing', new Map([['old.txt', Buffer.from('x')]]));
    await push(run, { repo: 'me/existing', hubUrl: hub.url }, say);
    expect(hub.requests).not.toContain('POST /api/repos/create');
    expect(hub.repos.get('me/existing')!.has('model.safetensors')).toBe(true);
  });

  it('refuses a damaged checkpoint before sending anything', async () => {
    const run = await writeRun('run-c');
    appendFileSync(join(run, 'checkpoints', 'step-2', 'model.safetensors'), 'x');
    await expect(push(run, { repo: 'me/damaged', hubUrl: hub.url }, say)).rejects.toThrow(/model\.safetensors/);
    expect(hub.requests).toEqual([]);
  });

  it('says how to give a token when the Hub refuses it or there is none', async () => {
    const run = await writeRun('run-d');
    process.env.HF_TOKEN = 'hf_wrong';
    await expect(push(run, { repo: 'me/x', hubUrl: hub.url }, say)).rejects.toThrow(
      /refused the access token.*HF_TOKEN/,
    );
    delete process.env.HF_TOKEN;
    const home = join(tmp, 'no-login');
    process.env.HF_HOME = home;
    try {
      hub.requests = [];
      await expect(push(run, { repo: 'me/x', hubUrl: hub.url }, say)).rejects.toThrow(
        /No Hugging Face token: set HF_TOKEN/,
      );
      expect(hub.requests).toEqual([]);
      mkdirSync(home, { recursive: true });
      writeFileSync(join(home, 'token'), `${TOKEN}\n`); // huggingface_hub's login file
      await push(run, { repo: 'me/from-login', hubUrl: hub.url }, say);
      expect(hub.repos.has('me/from-login')).toBe(true);
    } finally {
      delete process.env.HF_HOME;
    }
  });

  it('refuses a repository id that is not owner/name, naming it', async () => {
    const run = await writeRun('run-e');
    await expect(push(run, { repo: 'just-a-name', hubUrl: hub.url }, say)).rejects.toThrow(
      /--repo `just-a-name` is not a Hub repository id/,
    );
  });
});
