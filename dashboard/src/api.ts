// The dashboard page's client of the server's JSON API (src/dashboard/server.ts); types come from the server code.
import type { EpisodeRecord } from '../../src/agent/index.js';
import type { EpisodeFile, RunDetail, RunSummary, TagResult } from '../../src/dashboard/index.js';

export type { EpisodeRecord, EpisodeFile, RunDetail, RunSummary, TagResult };

/** GET a JSON endpoint; a non-2xx answer throws its `error` sentence. */
export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { cache: 'no-store' });
  const body = (await res.json().catch(() => ({ error: `the server answered ${res.status} without JSON` }))) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

export const api = {
  runs: () => getJson<{ roots: string[]; runs: RunSummary[] }>('/api/runs'),
  run: (id: string) => getJson<RunDetail>(`/api/run?id=${encodeURIComponent(id)}`),
  rollouts: (id: string, step: number) => getJson<EpisodeFile>(`/api/rollouts?id=${encodeURIComponent(id)}&step=${step}`),
  evalFile: (id: string, file: string) => getJson<EpisodeFile & { summary: TagResult[] }>(`/api/eval?id=${encodeURIComponent(id)}&file=${encodeURIComponent(file)}`),
  fileUrl: (id: string, path: string) => `/api/file?id=${encodeURIComponent(id)}&path=${encodeURIComponent(path)}`,
};
