// The dashboard's server-sent events: one poller for all open streams announces a run whose files changed
// (`change`) and new or removed runs (`runs`), so the shown page refreshes.
import { existsSync, readdirSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { runPaths, type RunIndex } from '../metrics/index.js';
import { EventStream } from '../util/index.js';

/** What changes when a run is written to: metrics.jsonl's size and time, and the rollout files. */
function runSignature(dir: string): string {
  const p = runPaths(dir);
  const parts: string[] = [];
  for (const f of [p.metrics, p.config]) parts.push(existsSync(f) ? `${statSync(f).size}:${statSync(f).mtimeMs}` : '-');
  for (const d of [p.rollouts, p.eval, p.checkpoints])
    parts.push(existsSync(d) ? readdirSync(d).length.toString() : '-');
  return parts.join('|');
}

/** The open event streams and the run signatures they were last told about. */
export class RunEvents {
  private readonly streams = new Set<EventStream>();
  private last = new Map<string, string>();

  constructor(private readonly index: RunIndex) {}

  /** Answer `/api/events`: the stream stays open until the client leaves. */
  open(res: ServerResponse): void {
    const stream = new EventStream(res).open(2000);
    this.streams.add(stream);
    res.on('close', () => this.streams.delete(stream));
  }

  /** Compare every run's files with the last poll and tell the streams what changed (nothing while none is open). */
  poll(): void {
    if (this.streams.size === 0) return;
    const now = new Map<string, string>();
    for (const r of this.index.entries()) now.set(r.id, runSignature(r.path));
    const changed = [...now].filter(([id, sig]) => this.last.get(id) !== sig).map(([id]) => id);
    const listingChanged = now.size !== this.last.size || [...now.keys()].some((id) => !this.last.has(id));
    if (this.last.size > 0 || now.size > 0) {
      if (listingChanged) for (const s of this.streams) s.send([...now.keys()], 'runs');
      if (changed.length > 0) for (const s of this.streams) s.send(changed, 'change');
    }
    this.last = now;
  }

  /** End every open stream. */
  close(): void {
    for (const s of this.streams) s.end();
  }
}
