import { describe, expect, it } from 'vitest';
import { Backoff } from './thread-pool.js';

describe('Backoff (when the thread pool stops handing work to its worker)', () => {
  it('keeps the worker when it finishes late but sooner than the main thread could have run its half', () => {
    const b = new Backoff(200, 0.1);
    for (let i = 0; i < 100; i++) b.record(1, 0.9, i); // a 1 ms half, then 0.9 ms of waiting: 1.9 ms < 2 ms serial
    for (let i = 0; i < 100; i++) b.record(0.02, 0.1, 100 + i); // a late wake-up on a tiny job: within the slack
    expect(b.serial(200)).toBe(false);
  });

  it('runs serially for coolMs of wall time after three strikes in a row, then tries the worker again', () => {
    const b = new Backoff(200, 0.1);
    b.record(1, 5, 10);
    b.record(1, 5, 20);
    expect(b.serial(21)).toBe(false);
    b.record(1, 5, 30); // third strike at t = 30 ms
    expect(b.serial(31)).toBe(true);
    expect(b.serial(229)).toBe(true);
    expect(b.serial(231)).toBe(false);
  });

  it('takes a strike back for each job without one', () => {
    const b = new Backoff(200, 0.1);
    b.record(1, 5, 0);
    b.record(1, 5, 1);
    b.record(1, 0.5, 2); // good: back to one strike
    b.record(1, 5, 3);
    expect(b.serial(4)).toBe(false);
    b.record(1, 5, 5);
    expect(b.serial(6)).toBe(true);
  });
});
