// The TensorBoard sink checked by two readers that share nothing with the writer: a Python script (below) with its own
// table-driven CRC-32C that verifies every TFRecord frame and decodes the Events with google.protobuf's descriptor
// machinery (Debian's python3-protobuf), and TensorBoard's own EventAccumulator (the project's wheel environment,
// .venv, or any interpreter with the tensorboard package).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonlSink } from './jsonl-sink.js';
import { readMetricsFile } from './jsonl.js';
import { MetricLogger } from './logger.js';
import { TensorBoardSink } from './tensorboard-sink.js';
import { crc32c } from './tfrecord.js';
import { backendsRequired } from '../tensor/testing.js';

const READER = String.raw`
import json, struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

def table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t
T = table()

def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

# event.proto / summary.proto, the fields TensorBoard's scalar loader reads
f = descriptor_pb2.FileDescriptorProto(name='ev.proto', package='tensorflow', syntax='proto3')
FD = descriptor_pb2.FieldDescriptorProto
def msg(name, fields):
    m = f.message_type.add(name=name)
    for fname, num, ftype, label, tname in fields:
        fd = m.field.add(name=fname, number=num, type=ftype, label=label)
        if tname: fd.type_name = tname
    return m
OPT, REP = FD.LABEL_OPTIONAL, FD.LABEL_REPEATED
msg('SummaryValue', [('tag', 1, FD.TYPE_STRING, OPT, None), ('simple_value', 2, FD.TYPE_FLOAT, OPT, None)])
msg('Summary', [('value', 1, FD.TYPE_MESSAGE, REP, '.tensorflow.SummaryValue')])
msg('SessionLog', [('status', 1, FD.TYPE_INT32, OPT, None)])
msg('Event', [('wall_time', 1, FD.TYPE_DOUBLE, OPT, None), ('step', 2, FD.TYPE_INT64, OPT, None),
              ('file_version', 3, FD.TYPE_STRING, OPT, None), ('summary', 5, FD.TYPE_MESSAGE, OPT, '.tensorflow.Summary'),
              ('session_log', 7, FD.TYPE_MESSAGE, OPT, '.tensorflow.SessionLog')])
pool = descriptor_pool.DescriptorPool()
pool.Add(f)
desc = pool.FindMessageTypeByName('tensorflow.Event')
Event = message_factory.GetMessageClass(desc) if hasattr(message_factory, 'GetMessageClass') else message_factory.MessageFactory(pool).GetPrototype(desc)

raw = open(sys.argv[1], 'rb').read()
out, pos = [], 0
while pos < len(raw):
    head = raw[pos:pos + 8]
    (n,) = struct.unpack('<Q', head)
    (hc,) = struct.unpack('<I', raw[pos + 8:pos + 12])
    if hc != masked(head): sys.exit('bad length crc at byte %d' % pos)
    data = raw[pos + 12:pos + 12 + n]
    (dc,) = struct.unpack('<I', raw[pos + 12 + n:pos + 16 + n])
    if dc != masked(data): sys.exit('bad data crc at byte %d' % pos)
    pos += 16 + n
    e = Event()
    e.ParseFromString(data)
    out.append({'wall_time': e.wall_time, 'step': e.step, 'file_version': e.file_version,
                'scalars': {v.tag: v.simple_value for v in e.summary.value},
                'session_status': e.session_log.status if e.HasField('session_log') else None})
print(json.dumps(out))
`;

/** The first interpreter that imports google.protobuf, or undefined. */
const python = [process.env.RAGEN_PYTHON, '/usr/bin/python3', 'python3']
  .filter((p): p is string => Boolean(p))
  .find((p) => spawnSync(p, ['-c', 'import google.protobuf'], { stdio: 'ignore' }).status === 0);
if (!python && backendsRequired())
  throw new Error(
    'RAGEN_REQUIRE_BACKENDS=1 requires python3-protobuf for the TensorBoard reader, and no python3 imports google.protobuf: `apt-get install python3-protobuf`.',
  );

interface Decoded {
  wall_time: number;
  step: number;
  file_version: string;
  scalars: Record<string, number>;
  session_status: number | null;
}

function readEvents(file: string): { ok: true; events: Decoded[] } | { ok: false; error: string } {
  const script = join(mkdtempSync(join(tmpdir(), 'ragen-tb-reader-')), 'read_events.py');
  writeFileSync(script, READER);
  const r = spawnSync(python!, [script, file], { encoding: 'utf8' });
  return r.status === 0
    ? { ok: true, events: JSON.parse(r.stdout) as Decoded[] }
    : { ok: false, error: r.stderr.trim() };
}

const tmp = () => mkdtempSync(join(tmpdir(), 'ragen-tb-'));

describe('CRC-32C', () => {
  it('gives the standard check value for "123456789"', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283); // RFC 3720 / iSCSI check value
  });
});

describe.runIf(python)('TensorBoard sink, read back by an independent Python reader', () => {
  it('writes a file-version event, then one event per record with its wall time, step and scalars', () => {
    const dir = join(tmp(), 'tensorboard');
    const sink = new TensorBoardSink({ dir, now: () => 1_700_000_000_500 });
    const logger = new MetricLogger([sink], { every: 2, now: () => 1_700_000_123_250 });
    logger.log({ 'train/success': 0.25, 'actor/pg_loss': -1.5 });
    logger.endStep(1);
    logger.log({ 'train/success': 0.75, 'actor/pg_loss': -0.5 });
    logger.endStep(2);
    logger.log({ 'val/Bandit/success': 0.125 });
    logger.flush(300);
    expect(readdirSync(dir)).toEqual([`events.out.tfevents.1700000000.${hostname()}`]);
    const read = readEvents(sink.file);
    if (!read.ok) throw new Error(read.error);
    expect(read.events).toEqual([
      { wall_time: 1_700_000_000.5, step: 0, file_version: 'brain.Event:2', scalars: {}, session_status: null },
      {
        wall_time: 1_700_000_123.25,
        step: 2,
        file_version: '',
        scalars: { 'actor/pg_loss': -1, 'train/success': 0.5 },
        session_status: null,
      },
      {
        wall_time: 1_700_000_123.25,
        step: 300,
        file_version: '',
        scalars: { 'val/Bandit/success': 0.125 },
        session_status: null,
      },
    ]);
  });

  it("starts a resumed run's file with a SessionLog START one step after the checkpoint, in a file of its own", () => {
    const dir = tmp();
    const first = new TensorBoardSink({ dir, now: () => 5_000 });
    const resumed = new TensorBoardSink({ dir, startStep: 40, now: () => 5_000 });
    expect(resumed.file).not.toBe(first.file);
    resumed.write({ step: 41, time: 6_000, 'train/success': 1 });
    const read = readEvents(resumed.file);
    if (!read.ok) throw new Error(read.error);
    expect(read.events.map((e) => [e.step, e.session_status, e.scalars])).toEqual([
      [0, null, {}],
      [41, 1, {}],
      [41, null, { 'train/success': 1 }],
    ]);
  });

  it('is rejected by the reader when a byte of the file is changed (the reader checks the CRCs)', () => {
    const sink = new TensorBoardSink({ dir: tmp(), now: () => 0 });
    sink.write({ step: 1, time: 0, 'train/success': 0.5 });
    const bytes = readFileSync(sink.file);
    bytes[bytes.length - 6]! ^= 0x01; // inside the last record's float
    writeFileSync(sink.file, bytes);
    const read = readEvents(sink.file);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.error).toMatch(/bad data crc/);
  });
});

const ACCUMULATE = String.raw`
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})  # 0: keep every point
acc.Reload()
print(json.dumps({t: [[e.step, e.value, e.wall_time] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}))
`;
const VENV = resolve(import.meta.dirname, '../../.venv/bin/python');
/** The first interpreter that imports TensorBoard's EventAccumulator, or undefined. */
const tensorboardPython = [
  process.env.RAGEN_TORCH2_PYTHON,
  existsSync(VENV) ? VENV : undefined,
  process.env.RAGEN_PYTHON,
  'python3',
]
  .filter((p): p is string => Boolean(p))
  .find(
    (p) =>
      spawnSync(p, ['-c', 'import tensorboard.backend.event_processing.event_accumulator'], { stdio: 'ignore' })
        .status === 0,
  );
if (!tensorboardPython && backendsRequired())
  throw new Error(
    "RAGEN_REQUIRE_BACKENDS=1 requires the tensorboard package for TensorBoard's own reader, and no interpreter imports it: make the project's .venv as .ci/run does (`.venv/bin/pip install tensorboard`).",
  );

/** {tag: [[step, value, wall_time], ...]} as TensorBoard's EventAccumulator loads the folder `dir`. */
function accumulate(dir: string): Record<string, [number, number, number][]> {
  const r = spawnSync(tensorboardPython!, ['-c', ACCUMULATE, dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as Record<string, [number, number, number][]>;
}

/** metrics.jsonl's numbers as TensorBoard should show them: per tag, [step, value as a float32, time in s]. */
function expectedScalars(file: string): Record<string, [number, number, number][]> {
  const out: Record<string, [number, number, number][]> = {};
  for (const { step, time, ...rest } of readMetricsFile(file))
    for (const [tag, v] of Object.entries(rest)) (out[tag] ??= []).push([step, Math.fround(v), time / 1000]);
  return out;
}

describe.runIf(tensorboardPython)("TensorBoard's own EventAccumulator reading our event files", () => {
  it('shows every tag with the steps, values and times of metrics.jsonl', () => {
    const run = tmp();
    const tb = new TensorBoardSink({ dir: join(run, 'tensorboard'), now: () => 1_700_000_000_000 });
    let clock = 1_700_000_001_000;
    const logger = new MetricLogger([new JsonlSink(join(run, 'metrics.jsonl')), tb], { now: () => (clock += 250) });
    for (let step = 1; step <= 4; step++) {
      logger.log({ 'train/success': step / 7, 'actor/pg_loss': -0.1 * step, 'actor/grad_norm': 1e3 + step });
      if (step % 2 === 0) logger.log({ 'val/Bandit/success': 1 / step });
      logger.endStep(step);
    }
    const expected = expectedScalars(join(run, 'metrics.jsonl'));
    expect(Object.keys(expected).sort()).toEqual([
      'actor/grad_norm',
      'actor/pg_loss',
      'train/success',
      'val/Bandit/success',
    ]);
    expect(accumulate(join(run, 'tensorboard'))).toEqual(expected);
  });

  it("drops the killed run's points past the checkpoint when the resumed run's file starts", () => {
    const run = tmp();
    const dir = join(run, 'tensorboard');
    const write = (sink: TensorBoardSink, from: number, to: number, base: number) => {
      for (let step = from; step <= to; step++) sink.write({ step, time: 10_000 + step, 'train/success': base + step });
    };
    write(new TensorBoardSink({ dir, now: () => 5_000 }), 1, 3, 0); // killed after step 3, last checkpoint at 2
    write(new TensorBoardSink({ dir, startStep: 2, now: () => 9_000 }), 3, 4, 100);
    expect(readdirSync(dir)).toHaveLength(2);
    expect(accumulate(dir)['train/success']!.map(([step, v]) => [step, v])).toEqual([
      [1, 1],
      [2, 2],
      [3, 103],
      [4, 104],
    ]);
  });
});
