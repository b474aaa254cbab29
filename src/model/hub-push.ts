// Uploading a model directory to the Hugging Face Hub as a model repository (`ragen push`), through @huggingface/hub:
// the repository is created when it does not exist, then every file goes in one commit (large weights through Git
// LFS or Xet, as the Hub asks). The files and their names are the caller's; nothing here reads a run.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commitIter, createRepo, HubApiError, repoExists, type CommitOperation } from '@huggingface/hub';
import { UsageError } from '../util/index.js';

/** The Hub's address unless `HF_ENDPOINT` names another (a mirror, an enterprise Hub, a test stand-in). */
export const HUB_URL = 'https://huggingface.co';

/** One file of the repository: its path there and where its bytes come from. */
export interface PushFile {
  path: string;
  /** A local file, or the bytes themselves (the generated model card). */
  source: { file: string } | { text: string };
}

/** Options of `pushModel`. */
export interface PushOptions {
  /** `owner/name`. */
  repo: string;
  /** A Hub access token with write access to `repo`'s owner. */
  token: string;
  /** @default HF_ENDPOINT, else https://huggingface.co */
  hubUrl?: string;
  /** Create the repository private (only when it does not exist yet). @default false */
  private?: boolean;
  /** The commit's title. @default "Upload model with ragen-ts" */
  message?: string;
  /** Told one line per phase of the upload. */
  say?: (line: string) => void;
}

/** What `pushModel` did. */
export interface PushResult {
  repoUrl: string;
  created: boolean;
  commitUrl: string;
}

/** `owner/name` and nothing else (the Hub's own rule for model ids, as `isHubId` reads them). */
export function checkRepoId(repo: string): void {
  if (!/^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/.test(repo) || repo.includes('..'))
    throw new UsageError(
      `--repo \`${repo}\` is not a Hub repository id: give owner/name, e.g. --repo me/sokoban-agent`,
    );
}

/**
 * The access token: HF_TOKEN, else the file huggingface_hub's login writes (HF_TOKEN_PATH, else `$HF_HOME/token`,
 * else ~/.cache/huggingface/token); undefined when there is none.
 */
export function hubToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.HF_TOKEN?.trim()) return env.HF_TOKEN.trim();
  const home = env.HF_HOME ?? join(env.HOME ?? homedir(), '.cache', 'huggingface');
  try {
    return readFileSync(env.HF_TOKEN_PATH ?? join(home, 'token'), 'utf8').trim() || undefined;
  } catch {
    return undefined; // no login file: the caller says how to give a token
  }
}

/** Upload `files` to the model repository `opts.repo` in one commit, creating the repository first if needed. */
export async function pushModel(files: PushFile[], opts: PushOptions): Promise<PushResult> {
  checkRepoId(opts.repo);
  const hubUrl = (opts.hubUrl ?? process.env.HF_ENDPOINT ?? HUB_URL).replace(/\/+$/, '');
  const repo = { type: 'model' as const, name: opts.repo };
  const auth = { accessToken: opts.token, hubUrl };
  const say = opts.say ?? (() => {});
  try {
    let created = false;
    let repoUrl = `${hubUrl}/${opts.repo}`;
    if (!(await repoExists({ repo, ...auth }))) {
      say(`creating ${opts.private ? 'private' : 'public'} model repository ${opts.repo} on ${hubUrl}`);
      repoUrl = (await createRepo({ repo, ...auth, private: opts.private ?? false })).repoUrl;
      created = true;
    }
    const operations: CommitOperation[] = files.map((f) => ({
      operation: 'addOrUpdate',
      path: f.path,
      content: 'file' in f.source ? pathToFileURL(f.source.file) : new Blob([f.source.text]), // files read lazily
    }));
    const commit = commitIter({ repo, ...auth, title: opts.message ?? 'Upload model with ragen-ts', operations });
    let step = await commit.next();
    while (!step.done) {
      if (step.value.event === 'phase') say(`${step.value.phase} (${files.length} files)`);
      step = await commit.next();
    }
    if (!step.value) throw new Error('the Hub answered the commit without a commit id');
    return { repoUrl, created, commitUrl: step.value.commit.url };
  } catch (err) {
    throw pushError(err, opts.repo, hubUrl);
  }
}

/** A failed upload as one sentence naming the repository and what to do. */
function pushError(err: unknown, repo: string, hubUrl: string): Error {
  if (err instanceof HubApiError) {
    const why = err.message ? ` (${err.message})` : '';
    if (err.statusCode === 401)
      return new UsageError(
        `${hubUrl} refused the access token${why}: set HF_TOKEN to a token with write access (https://huggingface.co/settings/tokens)`,
      );
    if (err.statusCode === 403 || err.statusCode === 404)
      return new UsageError(
        `${hubUrl} did not let this token write to ${repo}${why}: push to a repository under your own name or an organisation you can write to`,
      );
    return new UsageError(`${hubUrl} answered ${err.statusCode} while uploading to ${repo}${why}`);
  }
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof TypeError && /fetch failed/.test(message)) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return new UsageError(
      `could not reach ${hubUrl}${cause ? ` (${cause})` : ''} to upload ${repo}: check the network, or set HF_ENDPOINT to the Hub's address`,
    );
  }
  return err instanceof Error ? err : new Error(message);
}
