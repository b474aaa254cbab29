// Hugging Face Hub ids as model paths (`Qwen/Qwen2.5-0.5B-Instruct`): found in the local Hub cache in the layout the
// `huggingface_hub` Python library writes (models--owner--name/refs/main -> snapshots/<hash>), else downloaded into it
// with the official JS client `@huggingface/hub` (imported only then), with a progress bar on stderr.
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { SingleBar } from 'cli-progress';
import { ConfigError } from '../util/index.js';

/** `owner/name`: a Hub model id (letters, digits, `-`, `_`, `.`; neither part `.` or `..`). */
export function isHubId(text: string): boolean {
  const m = /^([\w.-]+)\/([\w.-]+)$/.exec(text);
  return m !== null && ![m[1], m[2]].some((p) => p === '.' || p === '..');
}

/** The Hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (as huggingface_hub). */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  return join(homedir(), '.cache', 'huggingface', 'hub');
}

/** The cache folder of one model repo: `<cache>/models--Qwen--Qwen2.5-0.5B-Instruct`. */
export function hubRepoDir(id: string, cacheDir = hubCacheDir()): string {
  return join(cacheDir, `models--${id.split('/').join('--')}`);
}

/** A commit hash as huggingface_hub writes them into refs/ (its REGEX_COMMIT_HASH). */
const COMMIT_HASH = /^[0-9a-f]{40}$/;

/**
 * The cached snapshot `refs/main` points at, if it holds a config.json; else null. The cache is read like network
 * input: a ref that is not a commit hash, or a snapshot that resolves outside `snapshots/` (a link), is a ConfigError.
 */
export function cachedHubModel(id: string, cacheDir = hubCacheDir()): string | null {
  const repo = hubRepoDir(id, cacheDir);
  const ref = join(repo, 'refs', 'main');
  if (!existsSync(ref)) return null;
  const commit = readFileSync(ref, 'utf8').trim();
  if (!COMMIT_HASH.test(commit)) {
    throw new ConfigError(
      `The Hugging Face cache's ${ref} holds ${JSON.stringify(commit)}, which is not a commit hash (40 hex digits naming a folder of ${join(repo, 'snapshots')}); delete ${repo} and download \`${id}\` again.`,
    );
  }
  const snapshots = join(repo, 'snapshots');
  const snapshot = join(snapshots, commit);
  if (!existsSync(join(snapshot, 'config.json'))) return null;
  const real = realpathSync(snapshot);
  const root = realpathSync(snapshots);
  if (dirname(real) !== root) {
    throw new ConfigError(
      `The Hugging Face cache's snapshot ${snapshot} resolves to ${real}, outside ${root}; a snapshot is a folder of the cache: delete ${repo} and download \`${id}\` again.`,
    );
  }
  return snapshot;
}

/** Options of `hubModel`. */
export interface HubModelOptions {
  /** The cache folder. @default hubCacheDir() */
  cacheDir?: string;
  /** Hub address (a local stand-in in tests). @default $HF_ENDPOINT, else the client's (https://huggingface.co) */
  hubUrl?: string;
  /** Never download (also set by HF_HUB_OFFLINE=1, as in huggingface_hub). @default false */
  offline?: boolean;
  /** Where the progress bar goes; null for none. @default process.stderr */
  progress?: NodeJS.WritableStream | null;
}

// What a model directory needs: weights, configs, tokenizer files; not other formats' weights (.bin, .onnx, .gguf).
const WANTED = /(\.safetensors|\.json|\.txt|\.model|\.jinja)$/;

/**
 * The local directory of Hub model `id`: the cached snapshot, else a fresh download into the cache. An offline miss
 * or a failed download is a ConfigError naming the cache path.
 */
export async function hubModel(id: string, opts: HubModelOptions = {}): Promise<string> {
  const cacheDir = opts.cacheDir ?? hubCacheDir();
  const cached = cachedHubModel(id, cacheDir);
  if (cached) return cached;
  const repo = hubRepoDir(id, cacheDir);
  if (opts.offline || /^(1|true|yes|on)$/i.test(process.env.HF_HUB_OFFLINE ?? '')) {
    throw new ConfigError(
      `Hub model \`${id}\` is not in the Hugging Face cache (${repo} has no refs/main snapshot with config.json) and downloads are off; download it with network (unset HF_HUB_OFFLINE) or point model.path at a local directory.`,
    );
  }
  try {
    return await download(id, cacheDir, opts);
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(
      `Hub model \`${id}\` is not in the Hugging Face cache (${repo}) and downloading it failed (${(e as Error).message}); check the id and the network, or point model.path at a local directory.`,
    );
  }
}

async function download(id: string, cacheDir: string, opts: HubModelOptions): Promise<string> {
  const hub = await import('@huggingface/hub');
  const hubUrl = opts.hubUrl ?? process.env.HF_ENDPOINT;
  const accessToken = process.env.HF_TOKEN;
  const bar =
    opts.progress === null
      ? null
      : new SingleBar({
          stream: opts.progress ?? process.stderr,
          format: `${id} [{bar}] {percentage}% {value}/{total} MB`,
          hideCursor: true,
          noTTYOutput: true,
        });
  let done = 0;
  // Count body bytes as they arrive: the client has no progress hook, but it takes a fetch function.
  const counting: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (!bar || !res.body || !String(input instanceof Request ? input.url : input).includes('/resolve/')) return res;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        done += chunk.byteLength;
        bar.update(Math.round(done / 1e5) / 10);
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(counter), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
  const common = {
    repo: { type: 'model' as const, name: id },
    fetch: counting,
    ...(hubUrl ? { hubUrl } : {}),
    ...(accessToken ? { accessToken } : {}),
  };
  const info = await hub.modelInfo({
    name: id,
    revision: 'main',
    additionalFields: ['sha'],
    fetch: counting,
    ...(hubUrl ? { hubUrl } : {}),
    ...(accessToken ? { accessToken } : {}),
  });
  const sha = (info as { sha?: string }).sha;
  if (!sha) throw new Error('the Hub did not report the commit of `main`');
  if (!COMMIT_HASH.test(sha))
    throw new ConfigError(
      `The Hub at ${hubUrl ?? 'https://huggingface.co'} reported ${JSON.stringify(sha)} as the commit of \`main\` of \`${id}\`, which is not a commit hash (40 hex digits); nothing was downloaded. Check HF_ENDPOINT.`,
    );
  const files: { path: string; size: number }[] = [];
  for await (const entry of hub.listFiles({ ...common, revision: sha, recursive: true })) {
    if (entry.type === 'file' && WANTED.test(entry.path)) files.push({ path: entry.path, size: entry.size });
  }
  if (!files.some((f) => f.path === 'config.json'))
    throw new ConfigError(
      `Hub repo \`${id}\` has no config.json at its top level, so it is not a model in Hugging Face layout.`,
    );
  bar?.start(Math.round(files.reduce((n, f) => n + f.size, 0) / 1e5) / 10, 0);
  try {
    for (const f of files) await hub.downloadFileToCacheDir({ ...common, path: f.path, revision: sha, cacheDir });
  } finally {
    bar?.stop();
  }
  // Written last: refs/main marks the snapshot complete for `cachedHubModel` (and for huggingface_hub).
  mkdirSync(join(hubRepoDir(id, cacheDir), 'refs'), { recursive: true });
  writeFileSync(join(hubRepoDir(id, cacheDir), 'refs', 'main'), sha);
  return join(hubRepoDir(id, cacheDir), 'snapshots', sha);
}
