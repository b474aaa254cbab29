// The run's console transcript, `<run>/console.log`: everything written to stdout and stderr while a run is open,
// colours stripped and carriage-return redraws collapsed to their last state. The progress bar writes past it
// (`untranscribed`); the console sink records the bar's plain lines instead (one per record).
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { withFileErrors } from '../util/index.js';

type Write = typeof process.stdout.write;

const open = new Set<ConsoleLog>();
/** The streams' own write functions while a transcript is open (null: none is, nothing is patched). */
let originals: { out: Write; err: Write; hookOut: Write; hookErr: Write } | null = null;

// CSI sequences (colours, cursor moves, line clears) and OSC sequences (titles, links).
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;

/** Plain text of a terminal chunk: no escape sequences, and of `a\rb` only `b` (a redrawn line's last state). */
export function plainText(chunk: string): string {
  return chunk
    .replace(ANSI, '')
    .split('\n')
    .map((line) => line.slice(line.lastIndexOf('\r') + 1))
    .join('\n');
}

function hook(stream: NodeJS.WriteStream, orig: Write): Write {
  return function (this: unknown, chunk: unknown, ...rest: unknown[]) {
    const text =
      typeof chunk === 'string'
        ? chunk
        : Buffer.from(chunk as Uint8Array).toString(typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : 'utf8');
    for (const log of open) log.append(text);
    return (orig as (...a: unknown[]) => boolean).call(stream, chunk, ...rest);
  } as Write;
}

/** Appends the process's console output to a file until closed (several may be open; each gets everything). */
export class ConsoleLog {
  private constructor(readonly file: string) {}

  /** Start the transcript at `file` (its folder is created). */
  static open(file: string): ConsoleLog {
    withFileErrors('create the console log folder', dirname(file), () => mkdirSync(dirname(file), { recursive: true }));
    const log = new ConsoleLog(file);
    withFileErrors('create the console log', file, () => appendFileSync(file, ''));
    if (!originals) {
      const out = process.stdout.write;
      const err = process.stderr.write;
      originals = { out, err, hookOut: hook(process.stdout, out), hookErr: hook(process.stderr, err) };
      process.stdout.write = originals.hookOut;
      process.stderr.write = originals.hookErr;
    }
    open.add(log);
    return log;
  }

  /**
   * Add text that did not pass through stdout/stderr (the progress bar's plain form). Written at once: a crash keeps
   * it.
   */
  append(text: string): void {
    const plain = plainText(text);
    if (plain) withFileErrors('append to the console log', this.file, () => appendFileSync(this.file, plain));
  }

  close(): void {
    open.delete(this);
    if (open.size > 0 || !originals) return;
    // Restore only what is still ours: a later patcher's write stays in place.
    if (process.stdout.write === originals.hookOut) process.stdout.write = originals.out;
    if (process.stderr.write === originals.hookErr) process.stderr.write = originals.err;
    originals = null;
  }
}

/** `stream` with writes that bypass every open transcript (for output that redraws itself, like a progress bar). */
export function untranscribed<S extends NodeJS.WritableStream>(stream: S): S {
  const s: unknown = stream;
  const raw = (): Write | undefined =>
    s === process.stdout ? originals?.out : s === process.stderr ? originals?.err : undefined;
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === 'write')
        return (...args: unknown[]) => ((raw() ?? target.write) as (...a: unknown[]) => boolean).apply(target, args);
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
