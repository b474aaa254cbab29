// issue 38 item 4: `ragen play` in a terminal moves on the key press (arrow keys and the env's action keys), without
// Enter, and puts the terminal back; a pipe still reads a line per action (src/cli/env-commands.test.ts).
import '../../envs/index.js'; // the built-in environments
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { makeEnv } from '../../env/index.js';
import { playInteractive } from './play.js';
import { actionKeys, keyCommand } from './play-keys.js';

/** A fake terminal: a stream with isTTY and setRawMode, recording the modes it was put in. */
function fakeTty() {
  const input = Object.assign(new PassThrough(), {
    isTTY: true,
    modes: [] as boolean[],
    setRawMode(mode: boolean) {
      input.modes.push(mode);
      return input;
    },
  });
  const output = new PassThrough();
  let text = '';
  output.on('data', (c: Buffer) => (text += c.toString()));
  return { input, output, text: () => text };
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('issue 38 item 4: ragen play acts on the key press in a terminal', () => {
  it('actionKeys maps arrows and distinct first letters; envs without such keys read lines', () => {
    expect(Object.fromEntries(actionKeys(['Up', 'Down', 'Left', 'Right'])!)).toEqual({
      up: 'Up',
      down: 'Down',
      left: 'Left',
      right: 'Right',
      u: 'Up',
      d: 'Down',
      l: 'Left',
      r: 'Right',
    });
    expect(Object.fromEntries(actionKeys(['BigWaveSurfer', 'Actuary'])!)).toEqual({ b: 'BigWaveSurfer', a: 'Actuary' });
    expect(actionKeys(['U', "U'", 'D', "D'"])).toBeNull(); // Rubik's: shared letters, no directions
    expect(actionKeys(undefined)).toBeNull();
    const keys = actionKeys(['Up', 'Down'])!;
    expect(keyCommand(undefined, { name: 'up' }, keys, false)).toEqual({ kind: 'action', action: 'Up' });
    expect(keyCommand('q', { name: 'q' }, keys, false)).toEqual({ kind: 'quit' });
    expect(keyCommand('\x03', { name: 'c', ctrl: true }, keys, false)).toEqual({ kind: 'quit' });
    expect(keyCommand('n', { name: 'n' }, keys, true)).toEqual({ kind: 'next' });
    expect(keyCommand('x', { name: 'x' }, keys, false)).toEqual({ kind: 'other' });
  });

  it('a key plays at once (no Enter), and the terminal leaves raw mode on q and on Ctrl-C', async () => {
    for (const quit of ['q', '\x03']) {
      const t = fakeTty();
      const done = playInteractive(makeEnv('SimpleSokoban'), 'SimpleSokoban', 3, 'train', t.input, t.output);
      t.input.write('\x1b[A'); // the up arrow, no newline
      await until('the move', () => t.text().includes('> Up'));
      expect(t.input.modes).toEqual([true]);
      t.input.write('l');
      await until('the second move', () => t.text().includes('> Left'));
      t.input.write(quit);
      await done;
      expect(t.input.modes).toEqual([true, false]);
      expect(t.text()).not.toContain('[invalid');
      expect(t.text()).toMatch(
        /Keys: arrow keys or u \(Up\), d \(Down\), l \(Left\), r \(Right\) play at once; q quits\./,
      );
    }
  });

  it('the terminal leaves raw mode when a step throws', async () => {
    const t = fakeTty();
    const env = makeEnv('SimpleSokoban');
    env.step = () => Promise.reject(new Error('env died'));
    const done = playInteractive(env, 'SimpleSokoban', 3, 'train', t.input, t.output);
    t.input.write('u');
    await expect(done).rejects.toThrow('env died');
    expect(t.input.modes).toEqual([true, false]);
  });

  // A real pseudo-terminal through util-linux `script`, when the machine has it.
  const hasScript = spawnSync('script', ['--version']).status === 0;
  const dir = mkdtempSync(join(tmpdir(), 'ragen-play-pty-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it.skipIf(!hasScript)(
    'in a pseudo-terminal: the up arrow moves before any Enter, and the terminal is cooked again after q',
    async () => {
      const main = join(dir, 'play.mjs');
      writeFileSync(
        main,
        `const m = await import(${JSON.stringify(resolve('src/cli/main.ts'))}); process.exitCode = await m.main(['play', 'SimpleSokoban', '--seed', '3']);`,
      );
      // `stty -a` after the game shows the terminal's modes as the game left them
      const child = spawn('script', ['-qfec', `${process.execPath} --import tsx ${main}; stty -a`, '/dev/null'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const exit = new Promise<number | null>((r) => child.on('exit', r));
      await until('the prompt', () => /q (to quit|quits)/.test(out), 60_000);
      child.stdin.write('\x1b[A');
      await until('the move', () => out.includes('> Up'));
      child.stdin.write('q');
      await until('stty', () => /\bicanon\b/.test(out) || /-icanon/.test(out));
      child.stdin.end();
      expect(await exit).toBe(0);
      expect(out).not.toMatch(/-icanon|-echo\b/);
      expect(out).toMatch(/\bicanon\b/);
    },
    90_000,
  );
});
