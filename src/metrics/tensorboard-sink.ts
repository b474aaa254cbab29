// TensorBoard event files: every record becomes one Event{wall_time, step, Summary{value{tag, simple_value}}} in
// `<run>/tensorboard/events.out.tfevents.<time>.<host>`, framed as TFRecords. The protobuf encoding is written by hand
// (four small messages of tensorflow/core/util/event.proto and framework/summary.proto), so no dependency is needed.
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { withFileErrors } from '../util/index.js';
import type { MetricRecord, MetricSink } from './logger.js';
import { tfRecord } from './tfrecord.js';

/** Protobuf wire types. */
const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const FIXED32 = 5;

/** A non-negative integer as a base-128 varint (steps and lengths; both are below 2^53). */
function varint(n: number): number[] {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`varint: expected a non-negative safe integer, got ${n}`);
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

const key = (field: number, wire: number) => varint(field * 8 + wire);
const bytesField = (field: number, data: Uint8Array) =>
  Buffer.concat([Buffer.from([...key(field, BYTES), ...varint(data.length)]), data]);

function doubleField(field: number, v: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return Buffer.concat([Buffer.from(key(field, FIXED64)), b]);
}

function floatField(field: number, v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeFloatLE(v);
  return Buffer.concat([Buffer.from(key(field, FIXED32)), b]);
}

/** Event fields: wall_time = 1, step = 2, then the `what` oneof: file_version = 3, summary = 5, session_log = 7. */
type EventBody = { fileVersion: string } | { scalars: [string, number][] } | { sessionStart: true };

/** One serialized Event. Summary.Value is {tag = 1, simple_value = 2}; SessionLog is {status = 1} with START = 1. */
export function encodeEvent(wallTime: number, step: number, body: EventBody): Buffer {
  const parts = [doubleField(1, wallTime), Buffer.from([...key(2, VARINT), ...varint(step)])];
  if ('fileVersion' in body) parts.push(bytesField(3, Buffer.from(body.fileVersion, 'utf8')));
  else if ('scalars' in body) {
    const values = body.scalars.map(([tag, v]) =>
      bytesField(1, Buffer.concat([bytesField(1, Buffer.from(tag, 'utf8')), floatField(2, v)])),
    );
    parts.push(bytesField(5, Buffer.concat(values)));
  } else parts.push(bytesField(7, Buffer.from([...key(1, VARINT), 1])));
  return Buffer.concat(parts);
}

export interface TensorBoardSinkOptions {
  /** The folder of event files (`<run>/tensorboard`), created if needed. */
  dir: string;
  /**
   * The step a resumed run starts after; > 0 writes a SessionLog START so TensorBoard drops later points of the killed
   * run. @default 0
   */
  startStep?: number;
  /** Clock in ms (tests pass a fake one). @default Date.now */
  now?: () => number;
}

/**
 * Appends one Event per record, flushed at once, so a killed run keeps what it logged (TensorBoard skips a torn last
 * record).
 */
export class TensorBoardSink implements MetricSink {
  readonly file: string;

  constructor(options: TensorBoardSinkOptions) {
    const now = options.now ?? Date.now;
    withFileErrors('create the TensorBoard folder', options.dir, () => mkdirSync(options.dir, { recursive: true }));
    // A resumed run in the same second gets its own file: TensorBoard reads every events file of the folder, in name
    // order.
    const base = join(options.dir, `events.out.tfevents.${Math.floor(now() / 1000)}.${hostname()}`);
    let file = base;
    for (let i = 2; existsSync(file); i++) file = `${base}.${i}`;
    this.file = file;
    const wallTime = now() / 1000;
    const head = [tfRecord(encodeEvent(wallTime, 0, { fileVersion: 'brain.Event:2' }))];
    const start = options.startStep ?? 0;
    if (start > 0) head.push(tfRecord(encodeEvent(wallTime, start + 1, { sessionStart: true })));
    withFileErrors('write the TensorBoard events', file, () => writeFileSync(file, Buffer.concat(head)));
  }

  write(record: MetricRecord): void {
    const scalars = Object.entries(record).filter(([k]) => k !== 'step' && k !== 'time');
    const data = tfRecord(encodeEvent(record.time / 1000, record.step, { scalars }));
    withFileErrors('append to the TensorBoard events', this.file, () => appendFileSync(this.file, data));
  }
}
