// metrics.jsonl: one JSON object per logged record, appended and flushed at once, so a killed run keeps every
// line written before it died. Non-finite numbers (JSON has none) are written as null.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { withFileErrors } from '../util/index.js';
import type { MetricRecord, MetricSink } from './logger.js';

/** Appends records to a JSONL file (created with its folder if needed). */
export class JsonlSink implements MetricSink {
  constructor(readonly file: string) {
    withFileErrors('create the metrics folder', dirname(file), () => mkdirSync(dirname(file), { recursive: true }));
  }

  write(record: MetricRecord): void {
    const line = `${JSON.stringify(record, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v))}\n`;
    withFileErrors('append to the metrics', this.file, () => appendFileSync(this.file, line));
  }
}

/** Read a metrics.jsonl back (null values come back as NaN); a missing file is an empty run. */
export function readMetricsFile(file: string): MetricRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l, (_k, v) => (v === null ? Number.NaN : v)) as MetricRecord);
}
