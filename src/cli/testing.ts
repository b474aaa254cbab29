// Test helper of the CLI: run `ragen <argv>` in-process and capture what it prints.
import { vi } from 'vitest';

/** What one in-process `ragen` call returned and printed (console and direct stream writes alike). */
export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `ragen <argv>` through `main`, with console.log/error and process.stdout/stderr writes captured. */
export async function runCli(...argv: string[]): Promise<CliRun> {
  const { main } = await import('./main.js');
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (err.push(String(s)), true));
  try {
    return { code: await main(argv), out: out.join('\n'), err: err.join('\n') };
  } finally {
    vi.restoreAllMocks();
  }
}
