// The console log: what reaches stdout/stderr is kept (colours and redraws collapsed), the progress bar's frames are
// not, and the bar's plain lines and messages are.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConsoleLog, plainText } from './console-log.js';
import { ConsoleSink } from './console-sink.js';

const file = () => join(mkdtempSync(join(tmpdir(), 'ragen-console-log-')), 'run', 'console.log');

describe('console log', () => {
  it('strips colours and keeps only the last state of a carriage-return redraw', () => {
    expect(plainText('\x1b[32mok\x1b[39m\n')).toBe('ok\n');
    expect(plainText('10%\r50%\r100%\ndone\n')).toBe('100%\ndone\n');
    expect(plainText('\x1b]8;;https://x\x07link\x1b]8;;\x07 \x1b[2K\x1b[1Gbar')).toBe('link bar');
  });

  // (console.log goes through process.stdout.write in Node; vitest routes console.* around it, so tests write
  // directly.)
  it('records stdout and stderr while open, and nothing after close', () => {
    const f = file();
    const log = ConsoleLog.open(f);
    process.stdout.write('to stdout\n');
    process.stderr.write(Buffer.from('\x1b[31mto stderr\x1b[39m\n'));
    log.close();
    process.stdout.write('after close\n');
    expect(readFileSync(f, 'utf8')).toBe('to stdout\nto stderr\n');
  });

  it('gives two open logs the same output and restores the streams only when both are closed', () => {
    const original = process.stdout.write;
    const [fa, fb] = [file(), file()];
    const a = ConsoleLog.open(fa);
    const b = ConsoleLog.open(fb);
    process.stdout.write('both\n');
    a.close();
    expect(process.stdout.write).not.toBe(original);
    process.stdout.write('only b\n');
    b.close();
    expect(process.stdout.write).toBe(original);
    expect(readFileSync(fa, 'utf8')).toBe('both\n');
    expect(readFileSync(fb, 'utf8')).toBe('both\nonly b\n');
  });

  it("keeps the progress bar's frames out and its plain lines and messages in", () => {
    const f = file();
    const log = ConsoleLog.open(f);
    // process.stderr made to look like a terminal, so cli-progress draws its frames (it draws nothing otherwise).
    const stderr = process.stderr as { isTTY?: boolean; columns?: number };
    const saved = { isTTY: stderr.isTTY, columns: stderr.columns };
    Object.assign(stderr, { isTTY: true, columns: 120 });
    try {
      const sink = new ConsoleSink({ totalSteps: 4, mode: 'bar', transcript: log, now: () => 0 });
      sink.write({ step: 1, time: 0, 'train/reward_mean': 0.125 });
      sink.message('checkpoint saved');
      sink.close();
    } finally {
      Object.assign(stderr, saved);
      log.close();
    }
    const text = readFileSync(f, 'utf8');
    expect(text).toContain('step 1/4 | reward 0.125');
    expect(text).toContain('checkpoint saved\n');
    expect(text).not.toContain('steps | ETA'); // the bar's format
  });
});
