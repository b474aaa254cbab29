// What the page is waiting for: every API request in flight, by name, with the bytes received so far, so a slow load
// shows its progress ("run 0/a: 412 kB", "1 of 3 done", seconds) instead of a bare "loading...".

interface Load {
  what: string;
  bytes: number;
  done: boolean;
}

let loads: Load[] = [];
const listeners = new Set<() => void>();
const notify = () => listeners.forEach((f) => f());

/** Track one request: `what` names it for people ("the run list", "run 0/a"); returns its progress callbacks. */
export function track(what: string): { received(bytes: number): void; done(): void } {
  const load: Load = { what, bytes: 0, done: false };
  loads.push(load);
  notify();
  return {
    received: (bytes) => {
      load.bytes += bytes;
      notify();
    },
    done: () => {
      load.done = true;
      notify();
    },
  };
}

/** Forget finished loads (a new page starts counting from zero). */
export function resetProgress(): void {
  loads = loads.filter((l) => !l.done);
}

/** Call `f` on every change; returns the unsubscribe. */
export function onProgress(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

function size(bytes: number): string {
  return bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(0)} kB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** One line: what is still loading (with the bytes received), how many of the requests are done, the time so far. */
export function progressText(seconds: number): string {
  const waiting = loads.filter((l) => !l.done);
  const done = loads.length - waiting.length;
  const items = waiting.map((l) => `${l.what}${l.bytes > 0 ? ` (${size(l.bytes)} received)` : ''}`);
  const head =
    waiting.length === 0 ? (loads.length === 0 ? 'starting' : 'drawing the page') : `loading ${items.join(', ')}`;
  return `${head}: ${done} of ${loads.length} request${loads.length === 1 ? '' : 's'} done, ${seconds.toFixed(1)} s`;
}
