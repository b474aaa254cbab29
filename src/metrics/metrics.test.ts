import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ppoPolicyLoss } from '../algo/index.js';
import { RagenError } from '../util/index.js';
import {
  ConsoleSink,
  JsonlSink,
  MetricLogger,
  createRunDir,
  describeMetric,
  formatDuration,
  isMetricKey,
  readMetricsFile,
  rolloutFile,
  runDirName,
  summaryTable,
  type MetricRecord,
} from './index.js';

const collect = () => {
  const records: MetricRecord[] = [];
  return { records, sink: { write: (r: MetricRecord) => void records.push({ ...r }) } };
};
const tmp = () => mkdtempSync(join(tmpdir(), 'ragen-metrics-'));

describe('metric names', () => {
  it('describe fixed keys and per-env families, and reject unknown ones', () => {
    expect(describeMetric('train/success')).toMatch(/succeeded/);
    expect(describeMetric('val/SimpleSokoban/success')).toMatch(/Per-env validation/);
    expect(isMetricKey('actor/grad_norm')).toBe(true);
    expect(isMetricKey('actor/gradnorm')).toBe(false);
    expect(isMetricKey('train/sucess')).toBe(false);
  });

  it('describe the per-source mismatch family by its names, and reject names outside it', () => {
    expect(describeMetric('mismatch/SimpleSokoban/k3_kl')).toMatch(/tag's loss tokens: the k3 estimate/);
    expect(describeMetric('mismatch/GuessNumberAgent/frac_ratio_low')).toMatch(/below 1\/algo.rolloutCorrection/);
    expect(isMetricKey('mismatch/SimpleSokoban/log_ratio_mean')).toBe(false); // overall only
    expect(isMetricKey('mismatch/a/b/k3_kl')).toBe(false);
    expect(describeMetric('mismatch/k3_kl')).toMatch(/KL\(μ ‖ π_old\)/); // the fixed key, not the family
  });

  it('describe actor/pg_clipfrac_lower as the fraction of all loss tokens, which is what the loss reports', () => {
    // 4 loss tokens: one A > 0, three A < 0 of which one is past the dual clip (r = e^2 > c = 3).
    const { stats } = ppoPolicyLoss({
      logprobs: [0, 0, 0, 2],
      oldLogprobs: [0, 0, 0, 0],
      advantages: [1, -1, -1, -1],
      mask: [1, 1, 1, 1],
      B: 1,
      T: 4,
      lossAgg: 'token-mean',
      clipRatioLow: 0.2,
      clipRatioHigh: 0.28,
      clipRatioC: 3,
    });
    expect(stats.clipfracDual).toBe(1 / 4); // of all loss tokens; of the negative-advantage ones it would be 1/3
    expect(describeMetric('actor/pg_clipfrac_lower')).toMatch(/of all loss tokens/);
    expect(describeMetric('actor/pg_clipfrac_lower')).not.toMatch(/of negative-advantage tokens/);
  });
});

describe('MetricLogger', () => {
  it('averages each key over the interval, skipping NaN, and clears after writing', () => {
    const { records, sink } = collect();
    const log = new MetricLogger([sink], { every: 2, now: () => 1000 });
    log.log({ 'actor/pg_loss': 1, 'train/success': 0.5 });
    log.log({ 'actor/pg_loss': 3, 'actor/entropy': Number.NaN });
    expect(log.endStep(1)).toBeUndefined();
    log.log({ 'actor/pg_loss': Number.NaN, 'train/success': 0.25, 'actor/entropy': Number.NaN });
    expect(log.endStep(2)).toEqual({ step: 2, time: 1000, 'actor/pg_loss': 2, 'train/success': 0.375 });
    expect(records).toHaveLength(1);
    log.log({ 'actor/pg_loss': 7 });
    expect(log.endStep(3)).toBeUndefined();
    expect(log.flush(3)).toEqual({ step: 3, time: 1000, 'actor/pg_loss': 7 });
    expect(log.flush(4)).toBeUndefined();
    expect(records.map((r) => r.step)).toEqual([2, 3]);
  });

  it('saves and restores the pending values, so a resumed interval averages the same', () => {
    const a = collect();
    const b = collect();
    const first = new MetricLogger([a.sink], { every: 3, now: () => 0 });
    first.log({ 'critic/vf_loss': 2 });
    first.endStep(1);
    const second = new MetricLogger([b.sink], { every: 3, now: () => 0 });
    second.setState(JSON.parse(JSON.stringify(first.getState())));
    for (const l of [first, second]) {
      l.log({ 'critic/vf_loss': 4 });
      l.endStep(2);
      l.log({ 'critic/vf_loss': 9 });
      l.endStep(3);
    }
    expect(b.records).toEqual(a.records);
    expect(a.records[0]!['critic/vf_loss']).toBe(5);
  });

  it('rejects a non-positive interval', () => {
    expect(() => new MetricLogger([], { every: 0 })).toThrow(RangeError);
  });
});

describe('JsonlSink', () => {
  it('appends one line per record and writes non-finite numbers as null', () => {
    const file = join(tmp(), 'sub', 'metrics.jsonl');
    const log = new MetricLogger([new JsonlSink(file)], { now: () => 5 });
    log.log({ 'train/success': 0.5 });
    log.endStep(1);
    log.log({ 'actor/grad_norm': Number.POSITIVE_INFINITY, 'train/success': 1 });
    log.endStep(2);
    expect(readFileSync(file, 'utf8')).toBe(
      '{"step":1,"time":5,"train/success":0.5}\n{"step":2,"time":5,"actor/grad_norm":null,"train/success":1}\n',
    );
    const back = readMetricsFile(file);
    expect(back[0]).toEqual({ step: 1, time: 5, 'train/success': 0.5 });
    expect(back[1]!['actor/grad_norm']).toBeNaN();
    expect(readMetricsFile(join(tmp(), 'none.jsonl'))).toEqual([]);
  });
  it('reads a corrupt metrics.jsonl as one error naming the file and the line, not a partial run', () => {
    const file = join(tmp(), 'metrics.jsonl');
    writeFileSync(file, '{"step":1}\n{"step":2,\n{"step":3}\n');
    expect(() => readMetricsFile(file)).toThrow(RagenError);
    expect(() => readMetricsFile(file)).toThrow(/metrics\.jsonl: line 2 is not valid JSON/);
  });
});

describe('ConsoleSink', () => {
  const capture = (isTTY: boolean) => {
    let text = '';
    const stream = Object.assign(
      new Writable({
        write(chunk, _enc, cb) {
          text += String(chunk);
          cb();
        },
      }),
      // A wide terminal: cli-progress cuts each line at the stream's width, colour codes included
      // (picocolors turns colour on when CI is set).
      { isTTY, columns: 200 },
    );
    return { stream, text: () => text };
  };

  it('prints plain lines with live values and an ETA when not on a terminal', () => {
    const out = capture(false);
    let t = 0;
    const sink = new ConsoleSink({ totalSteps: 10, stream: out.stream, now: () => t });
    t = 4000;
    sink.write({
      step: 2,
      time: 0,
      'train/reward_mean': 0.5,
      'train/success': 0.25,
      'actor/entropy': 1.5,
      'timing_s/step': 2,
    });
    sink.message('checkpoint saved');
    t = 6000;
    sink.write({ step: 3, time: 0, 'val/A/success': 0.5, 'val/B/success': 1, 'train/success': 0.5 });
    sink.close();
    expect(out.text()).toBe(
      'step 2/10 | reward 0.500 | success 0.250 | val - | entropy 1.500 | 2.00 s/step | eta 16s\n' +
        'checkpoint saved\n' +
        'step 3/10 | reward 0.500 | success 0.500 | val 0.750 | entropy 1.500 | 2.00 s/step | eta 14s\n',
    );
  });

  it('draws a progress bar on a terminal and stays silent in `none` mode', () => {
    const tty = capture(true);
    const bar = new ConsoleSink({ totalSteps: 4, stream: tty.stream });
    bar.write({ step: 1, time: 0, 'train/reward_mean': 0.125 });
    bar.close();
    expect(tty.text()).toContain('1/4 steps');
    expect(tty.text()).toContain('0.125');
    const quiet = capture(false);
    const none = new ConsoleSink({ totalSteps: 4, stream: quiet.stream, mode: 'none' });
    none.write({ step: 1, time: 0 });
    none.message('x');
    expect(quiet.text()).toBe('');
  });

  it('formats durations and the end-of-run table', () => {
    expect([formatDuration(42), formatDuration(725), formatDuration(3720), formatDuration(Number.NaN)]).toEqual([
      '42s',
      '12m05s',
      '1h02m',
      '-',
    ]);
    expect(
      summaryTable([
        { tag: 'SimpleSokoban', before: 0.3125, after: 0.5 },
        { tag: 'Bandit', after: 0.9 },
      ]),
    ).toBe(
      'env            before    after     change\n' +
        'SimpleSokoban  0.313     0.500     +0.188\n' +
        'Bandit         -         0.900     -',
    );
  });
});

describe('run directory', () => {
  it('is named <env>__<algo>__<seed>__<UTC timestamp>', () => {
    expect(
      runDirName({ env: 'SimpleSokoban', algo: 'gae', seed: 10000, time: new Date(Date.UTC(2025, 0, 2, 3, 4, 5)) }),
    ).toBe('SimpleSokoban__gae__10000__20250102-030405');
    expect(runDirName({ env: 'a b/c', algo: 'grpo', seed: 1, time: new Date(0) })).toBe(
      'a-b-c__grpo__1__19700101-000000',
    );
  });

  it('creates its folders, never reuses a name, and names rollout files per step', () => {
    const runsDir = tmp();
    const time = new Date(Date.UTC(2025, 5, 1));
    const a = createRunDir({ runsDir, env: 'Bandit', algo: 'grpo', seed: 3, time });
    const b = createRunDir({ runsDir, env: 'Bandit', algo: 'grpo', seed: 3, time });
    expect(b.root).toBe(`${a.root}-2`);
    for (const d of [a.rollouts, a.checkpoints, a.eval]) expect(existsSync(d)).toBe(true);
    expect(rolloutFile(a, 7)).toBe(join(a.root, 'rollouts', 'step-7.jsonl'));
  });
});
