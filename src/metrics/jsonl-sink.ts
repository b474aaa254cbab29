// metrics.jsonl: one JSON object per logged record, appended and flushed at once, so a killed run keeps every
// line written before it died. Non-finite numbers (JSON has none) are written as null.
import { appendFileSync, mkdirSync } from 'node:fs';
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
