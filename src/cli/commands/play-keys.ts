// `ragen play` in a terminal, key by key: the arrow keys and the env's action keys (each action's first letter) act at
// once in raw mode, without Enter; q, Esc or Ctrl-C quits, and the terminal is put back however the game ends.
import { emitKeypressEvents, type Key } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/** A terminal input stream: what raw mode needs (process.stdin when it is a TTY). */
export interface KeyInput extends Readable {
  isTTY?: boolean;
  setRawMode(mode: boolean): unknown;
}

const ARROW_KEYS: Record<string, string> = { up: 'up', down: 'down', left: 'left', right: 'right' };

/**
 * The keys that play `names` at once: each arrow whose direction is an action (`Up`, as the env spells it), and each
 * action's first letter (lower case) when the actions' first letters are distinct and none is `q` (quit). Null when no
 * key maps (free-text envs, and names such as Rubik's `U`/`U'` that share letters): those envs read lines.
 */
export function actionKeys(names: readonly string[] | undefined): Map<string, string> | null {
  if (!names || names.length === 0) return null;
  const keys = new Map<string, string>();
  for (const [key, dir] of Object.entries(ARROW_KEYS)) {
    const name = names.find((n) => n.toLowerCase() === dir);
    if (name !== undefined) keys.set(key, name);
  }
  const firsts = names.map((n) => n[0]?.toLowerCase() ?? '');
  if (new Set(firsts).size === names.length && !firsts.includes('q') && !firsts.includes('')) {
    names.forEach((n, i) => keys.set(firsts[i]!, n));
  }
  return keys.size > 0 ? keys : null;
}

/** What one keypress means: an action, quit, the next seed (after an episode), or nothing (with a hint). */
export type KeyCommand = { kind: 'action'; action: string } | { kind: 'quit' } | { kind: 'next' } | { kind: 'other' };

/**
 * The meaning of a keypress (`str`, `key` as readline's keypress event gives them) while an episode runs or has
 * `ended`.
 */
export function keyCommand(
  str: string | undefined,
  key: Key | undefined,
  keys: Map<string, string>,
  ended: boolean,
): KeyCommand {
  const name = key?.name ?? str ?? '';
  if ((key?.ctrl && (name === 'c' || name === 'd')) || name === 'escape' || name === 'q') return { kind: 'quit' };
  if (ended) return name === 'n' ? { kind: 'next' } : { kind: 'quit' };
  if (key?.ctrl || key?.meta) return { kind: 'other' };
  const action = keys.get(name.toLowerCase());
  return action !== undefined ? { kind: 'action', action } : { kind: 'other' };
}

/** How the keys read, for the prompt: "arrow keys or u/d/l/r". */
export function keysHelp(keys: Map<string, string>): string {
  const arrows = [...keys.keys()].filter((k) => k in ARROW_KEYS);
  const letters = [...keys.keys()].filter((k) => !(k in ARROW_KEYS));
  const parts = [
    arrows.length ? 'arrow keys' : '',
    letters.length ? letters.map((k) => `${k} (${keys.get(k)})`).join(', ') : '',
  ].filter(Boolean);
  return parts.join(' or ');
}

/**
 * Read keypresses from `input` in raw mode and call `onKey` for each (awaited in order) until it returns false or the
 * input ends; the terminal leaves raw mode afterwards, also if `onKey` throws or the process exits meanwhile.
 */
export async function readKeys(
  input: KeyInput,
  output: Writable,
  onKey: (str: string | undefined, key: Key | undefined) => Promise<boolean>,
): Promise<void> {
  emitKeypressEvents(input);
  const restore = () => {
    input.setRawMode(false);
  };
  process.once('exit', restore); // a crash elsewhere must not leave the terminal in raw mode
  input.setRawMode(true);
  input.resume();
  try {
    await new Promise<void>((resolve, reject) => {
      let chain = Promise.resolve(true);
      const onKeypress = (str: string | undefined, key: Key | undefined) => {
        chain = chain
          .then(async (going) => going && (await onKey(str, key)))
          .then(
            (going) => {
              if (!going) done();
              return going;
            },
            (err: unknown) => {
              done(err);
              return false;
            },
          );
      };
      const done = (err?: unknown) => {
        input.off('keypress', onKeypress);
        input.off('end', onEnd);
        if (err === undefined) resolve();
        else reject(err instanceof Error ? err : new Error(String(err)));
      };
      const onEnd = () => done();
      input.on('keypress', onKeypress);
      input.on('end', onEnd);
    });
  } finally {
    process.off('exit', restore);
    restore();
    input.pause();
    output.write('\n');
  }
}
