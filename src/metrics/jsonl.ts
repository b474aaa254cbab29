// Reading JSONL written by a run that may still be running or may have crashed: every good line is kept, and each bad
// one becomes a problem sentence for the page instead of an exception (a crash mid-write leaves a truncated last line).
// The one reader of run files: the dashboard, the trainer's tests and the lab's study all read through here.
import { existsSync, readFileSync } from 'node:fs';
import { RagenError } from '../util/index.js';
import type { MetricRecord } from './logger.js';

/** Lines that parsed, and one sentence per line that did not (or for a missing file). */
export interface JsonlRead<T> {
  records: T[];
  problems: string[];
}

/**
 * Parse JSONL text. `null` values come back as NaN when `nullAsNaN` (metrics.jsonl writes non-finite numbers as null).
 * A last line without its newline that does not parse is reported as truncated (the writer died mid-line); a bad line
 * elsewhere is reported as corrupt. Lines that are not JSON objects are reported too.
 */
export function parseJsonl<T = Record<string, unknown>>(
  text: string,
  source: string,
  opts: { nullAsNaN?: boolean } = {},
): JsonlRead<T> {
  const records: T[] = [];
  const problems: string[] = [];
  const lines = text.split('\n');
  const endsClean = text.endsWith('\n') || text === '';
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const last = i === lines.length - 1;
    try {
      const value = JSON.parse(line, opts.nullAsNaN ? (_k, v) => (v === null ? Number.NaN : v) : undefined) as unknown;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problems.push(`${source}: line ${i + 1} is not a JSON object (${line.slice(0, 40)}); ignored.`);
        return;
      }
      records.push(value as T);
    } catch {
      if (last && !endsClean)
        problems.push(
          `${source}: the last line (${i + 1}) is truncated, probably by a crash while it was written; ignored.`,
        );
      else problems.push(`${source}: line ${i + 1} is not valid JSON (${line.slice(0, 40)}...); ignored.`);
    }
  });
  return { records, problems };
}

/** Read a JSONL file; a missing or unreadable file is one problem and no records. */
export function readJsonl<T = Record<string, unknown>>(
  file: string,
  source: string,
  opts: { nullAsNaN?: boolean } = {},
): JsonlRead<T> {
  if (!existsSync(file)) return { records: [], problems: [`${source} is missing.`] };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { records: [], problems: [`${source} cannot be read (${(err as Error).message}).`] };
  }
  return parseJsonl<T>(text, source, opts);
}

/**
 * Read a finished run's metrics.jsonl (null values come back as NaN); a missing file is an empty run. A bad line is an
 * error here, unlike `readJsonl`: callers compare whole runs, and a silently dropped step would pass for a shorter one.
 */
export function readMetricsFile(file: string): MetricRecord[] {
  if (!existsSync(file)) return [];
  const { records, problems } = readJsonl<MetricRecord>(file, file, { nullAsNaN: true });
  if (problems.length > 0)
    throw new RagenError(`${problems[0]!.replace(/; ignored\.$/, '.')} Rerun the run or remove the line.`);
  return records;
}
