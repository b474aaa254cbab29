// The dashboard page's client of the server's JSON API (src/dashboard/server.ts); types come from the server code.
import type { EpisodeRecord } from '../../src/agent/index.js';
import type { EpisodeFile, RunDetail, RunSummary, TagResult } from '../../src/dashboard/index.js';
import { track } from './progress.js';

export type { EpisodeRecord, EpisodeFile, RunDetail, RunSummary, TagResult };

/**
 * GET a JSON endpoint; a non-2xx answer throws its `error` sentence. `what` names it in the loading progress
 * (src/progress.ts), which counts the bytes as they arrive.
 */
export async function getJson<T>(path: string, what: string = path): Promise<T> {
  const load = track(what);
  try {
    const res = await fetch(path, { cache: 'no-store' });
    const text = await readText(res, load.received);
    let body: T & { error?: string };
    try {
      body = JSON.parse(text) as T & { error?: string };
    } catch {
      body = { error: `the server answered ${res.status} without JSON` } as T & { error?: string };
    }
    if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
    return body;
  } finally {
    load.done();
  }
}

/** The body as text, read chunk by chunk so the progress shows the bytes received. */
async function readText(res: Response, received: (bytes: number) => void): Promise<string> {
  if (!res.body) return res.text();
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    text += decoder.decode(value, { stream: true });
    received(value.byteLength);
  }
}

export const api = {
  runs: () => getJson<{ roots: string[]; runs: RunSummary[] }>('/api/runs', 'the run list'),
  run: (id: string) => getJson<RunDetail>(`/api/run?id=${encodeURIComponent(id)}`, `run ${id}`),
  rollouts: (id: string, step: number) =>
    getJson<EpisodeFile>(
      `/api/rollouts?id=${encodeURIComponent(id)}&step=${step}`,
      `run ${id}: rollouts of step ${step}`,
    ),
  evalFile: (id: string, file: string) =>
    getJson<EpisodeFile & { summary: TagResult[] }>(
      `/api/eval?id=${encodeURIComponent(id)}&file=${encodeURIComponent(file)}`,
      `run ${id}: ${file}`,
    ),
  fileUrl: (id: string, path: string) => `/api/file?id=${encodeURIComponent(id)}&path=${encodeURIComponent(path)}`,
};
