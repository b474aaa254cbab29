// Hub ids as model paths: the Hugging Face cache layout written by hand (refs/main -> snapshots/<hash>), the offline
// miss, and a download through @huggingface/hub from a local stand-in of the Hub's HTTP API.
import { createServer, type Server } from 'node:http';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { cachedHubModel, hubCacheDir, hubModel, isHubId } from './hub.js';
import { findModelPath, resolveModelPath } from './model-path.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-hub-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const HASH = 'a'.repeat(40);
/** A cache in huggingface_hub's layout holding `id` at HASH (written here, not by the code under test). */
function writeCache(cache: string, id: string): string {
  const repo = join(cache, `models--${id.replace('/', '--')}`);
  const snap = join(repo, 'snapshots', HASH);
  mkdirSync(snap, { recursive: true });
  mkdirSync(join(repo, 'refs'), { recursive: true });
  writeFileSync(join(repo, 'refs', 'main'), `${HASH}\n`);
  writeFileSync(join(snap, 'config.json'), '{}');
  return snap;
}

describe('the Hugging Face cache folder', () => {
  it('is HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub', () => {
    expect(hubCacheDir({ HF_HUB_CACHE: '/c', HF_HOME: '/h' })).toBe('/c');
    expect(hubCacheDir({ HF_HOME: '/h' })).toBe('/h/hub');
    expect(hubCacheDir({ HOME: '/x' })).toMatch(/\.cache\/huggingface\/hub$/);
  });
});

describe('Hub ids', () => {
  it('are owner/name, and nothing else is', () => {
    expect(isHubId('Qwen/Qwen2.5-0.5B-Instruct')).toBe(true);
    for (const s of ['ragen-tiny', 'a/b/c', '/abs/x', '../x', './x', 'a/..']) expect(isHubId(s)).toBe(false);
  });

  it('resolve to the snapshot refs/main names, without any network', async () => {
    const cache = join(tmp, 'cache1');
    const snap = writeCache(cache, 'Qwen/Qwen2.5-0.5B-Instruct');
    expect(cachedHubModel('Qwen/Qwen2.5-0.5B-Instruct', cache)).toBe(snap);
    expect(
      await resolveModelPath('Qwen/Qwen2.5-0.5B-Instruct', {
        cacheDir: cache,
        offline: true,
        hubUrl: 'http://127.0.0.1:1',
      }),
    ).toBe(snap);
  });

  it('are found through HF_HOME by the config path lookup', () => {
    const home = join(tmp, 'hfhome');
    const snap = writeCache(join(home, 'hub'), 'org/model');
    const saved = { ...process.env };
    try {
      delete process.env.HF_HUB_CACHE;
      process.env.HF_HOME = home;
      expect(findModelPath('org/model')).toBe(snap);
    } finally {
      process.env = saved;
    }
  });

  it('item 9: a refs/main that leads out of the cache is refused in one sentence, not loaded', async () => {
    const cache = join(tmp, 'escape');
    const repo = join(cache, 'models--org--escape');
    writeCache(cache, 'org/escape');
    const outside = join(tmp, 'repo', 'models', 'ragen-tiny'); // a model directory outside the cache
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'config.json'), '{}');
    for (const ref of ['../../../repo/models/ragen-tiny', outside, 'main/../..', '']) {
      writeFileSync(join(repo, 'refs', 'main'), `${ref}\n`);
      const err = (() => {
        try {
          return cachedHubModel('org/escape', cache);
        } catch (e) {
          return e;
        }
      })();
      expect(err, ref).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(join(repo, 'refs', 'main'));
      expect((err as Error).message).toContain(JSON.stringify(ref));
      expect((err as Error).message.split('\n')).toHaveLength(1);
      await expect(hubModel('org/escape', { cacheDir: cache, offline: true })).rejects.toThrow(/is not a commit hash/);
    }
  });

  it('item 9: a snapshot folder that is a link out of the cache is refused', () => {
    const cache = join(tmp, 'escape-link');
    const snap = writeCache(cache, 'org/link');
    const outside = join(tmp, 'elsewhere');
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'config.json'), '{}');
    rmSync(snap, { recursive: true });
    symlinkSync(outside, snap);
    expect(() => cachedHubModel('org/link', cache)).toThrow(/resolves to .*elsewhere, outside .*snapshots/);
  });

  it('missing offline is one ConfigError naming the cache path', async () => {
    const cache = join(tmp, 'empty');
    const err = await hubModel('org/absent', { cacheDir: cache, offline: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(join(cache, 'models--org--absent'));
    expect((err as Error).message.split('\n')).toHaveLength(1);
  });
});

describe('shipped models and user paths', () => {
  it('a shipped name resolves to the package models/ folder, also in the older models/<name> form', () => {
    const shipped = resolve(import.meta.dirname, '../../models/ragen-tiny');
    const cwd = process.cwd();
    try {
      process.chdir(tmp); // outside the repository: no models/ here
      expect(findModelPath('ragen-tiny')).toBe(shipped);
      expect(findModelPath('models/ragen-tiny')).toBe(shipped);
    } finally {
      process.chdir(cwd);
    }
  });

  it('a directory the user has wins over a shipped model of the same name', () => {
    const cwd = process.cwd();
    const mine = join(tmp, 'user', 'ragen-tiny');
    mkdirSync(mine, { recursive: true });
    try {
      process.chdir(join(tmp, 'user'));
      expect(findModelPath('ragen-tiny')).toBe(mine);
    } finally {
      process.chdir(cwd);
    }
  });

  it('a path that is nothing is a ConfigError naming the key and the shipped models', async () => {
    await expect(resolveModelPath('no-such-model')).rejects.toThrow(/`model\.path` = "no-such-model".*ragen-tiny/);
    await expect(resolveModelPath('/no/such/dir')).rejects.toThrow(/no such directory/);
  });
});

// A stand-in of the four Hub endpoints the client calls: model info (the commit of main), the file tree, paths-info
// (each file's etag) and resolve (the bytes, honouring Range).
describe('a Hub id missing from the cache', () => {
  const files: Record<string, Buffer> = {
    'config.json': Buffer.from('{"model_type": "qwen2"}'),
    'model.safetensors': Buffer.alloc(300_000, 7),
    'tokenizer.json': Buffer.from('{}'),
    'pytorch_model.bin': Buffer.alloc(10, 1), // another format's weights: not downloaded
  };
  const COMMIT = 'b'.repeat(40);
  const seen: string[] = [];
  let server: Server;
  let url = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      const u = new URL(req.url!, 'http://x');
      seen.push(`${req.method} ${u.pathname}`);
      const entries = Object.entries(files).map(([path, b]) => ({
        type: 'file',
        path,
        size: b.length,
        oid: `oid-${path}`,
      }));
      if (u.pathname === '/api/models/org/tiny/revision/main')
        return json(res, { _id: '1', id: 'org/tiny', sha: COMMIT });
      if (u.pathname === '/api/models/org/evil/revision/main')
        return json(res, { _id: '2', id: 'org/evil', sha: '../../../evil' });
      if (u.pathname === `/api/models/org/tiny/tree/${COMMIT}`) return json(res, entries);
      if (u.pathname === `/api/models/org/tiny/paths-info/${COMMIT}`) {
        let body = '';
        req.on('data', (c: Buffer) => (body += c));
        req.on('end', () =>
          json(
            res,
            entries.filter((e) => (JSON.parse(body) as { paths: string[] }).paths.includes(e.path)),
          ),
        );
        return;
      }
      const m = new RegExp(`^/org/tiny/resolve/${COMMIT}/(.+)$`).exec(u.pathname);
      const data = m ? files[m[1]!] : undefined;
      if (!data) return void res.writeHead(404, { 'X-Error-Code': 'EntryNotFound' }).end();
      const range = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      const end = range && range[2] ? Number(range[2]) : data.length - 1;
      res.writeHead(range ? 206 : 200, {
        ETag: `"oid-${m![1]}"`,
        'Content-Range': `bytes ${start}-${end}/${data.length}`,
        'Content-Length': end - start + 1,
      });
      res.end(data.subarray(start, end + 1));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  afterEach(() => (seen.length = 0));

  it('is downloaded through @huggingface/hub into the cache layout, then found there with no request', async () => {
    const cache = join(tmp, 'dl');
    const progress: string[] = [];
    const stream = { write: (s: string) => (progress.push(s), true), isTTY: false } as unknown as NodeJS.WritableStream;
    const dir = await hubModel('org/tiny', { cacheDir: cache, hubUrl: url, progress: stream });
    const repo = join(cache, 'models--org--tiny');
    expect(dir).toBe(join(repo, 'snapshots', COMMIT));
    expect(readFileSync(join(repo, 'refs', 'main'), 'utf8')).toBe(COMMIT);
    expect(readFileSync(join(dir, 'model.safetensors')).equals(files['model.safetensors']!)).toBe(true);
    expect(readlinkSync(join(dir, 'config.json'))).toContain('blobs'); // snapshot files link to blobs, as huggingface_hub's
    expect(() => readFileSync(join(dir, 'pytorch_model.bin'))).toThrow();
    expect(progress.join('')).toContain('org/tiny');
    const before = seen.length;
    expect(await hubModel('org/tiny', { cacheDir: cache, hubUrl: url, offline: true })).toBe(dir);
    expect(seen.length).toBe(before);
  });

  it('item 9: a Hub that reports a commit that is not a hash is refused before anything is written', async () => {
    const cache = join(tmp, 'dl-evil');
    const err = await hubModel('org/evil', { cacheDir: cache, hubUrl: url, progress: null }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /reported "\.\.\/\.\.\/\.\.\/evil" as the commit of `main` of `org\/evil`, which is not a commit hash/,
    );
    expect(existsSync(join(cache, 'evil'))).toBe(false);
    expect(existsSync(join(cache, 'models--org--evil', 'refs', 'main'))).toBe(false);
  });

  it('an unknown repo is one ConfigError naming the cache path', async () => {
    const cache = join(tmp, 'dl2');
    const err = await hubModel('org/nope', { cacheDir: cache, hubUrl: url, progress: null }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(join(cache, 'models--org--nope'));
  });
});

function json(res: import('node:http').ServerResponse, body: unknown): void {
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}
