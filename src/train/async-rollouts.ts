// Asynchronous rollouts (trainer.async): the rollouts of steps k+1..k+n are generated while step k's update runs,
// so env latency and generation overlap training. A version clock makes it deterministic: call c of the rollout
// for step r, started at policy version s, runs at exactly version min(s + c, r - 1), and an update waits until
// every rollout in flight has made its calls at the current version (or ended). n = maxStaleness bounds the lag.
import { EnvGroups, type Policy } from '../agent/index.js';
import { envGroupsOptions } from '../config/index.js';
import { collectRollout, starpoUpdate, type CollectedRollout, type StepContext, type StepOutput } from './step.js';

/** One rollout in flight, as the clock sees it. */
interface Flight {
  step: number;
  /** Policy version when it started. */
  startVersion: number;
  /** Generate calls done. */
  calls: number;
  running: boolean;
  finished: boolean;
}

/** Policy versions (updates applied) and who may use the engine when: generate calls vs the update. */
export class VersionClock {
  /** Updates applied so far (the current policy's version). */
  version: number;
  private updating = false;
  private readonly flights = new Set<Flight>();
  private waiters: (() => boolean)[] = [];
  private abandoned = false;

  constructor(start: number) {
    this.version = start;
  }

  /** The version call `f.calls` of a flight must run at. */
  static target(f: Flight): number {
    return Math.min(f.startVersion + f.calls, f.step - 1);
  }

  /** Register a rollout for `step`, starting at the current version. */
  open(step: number): Flight {
    const f: Flight = { step, startVersion: this.version, calls: 0, running: false, finished: false };
    this.flights.add(f);
    return f;
  }

  /** The flight's next generate call may run: its target version is current and no update runs. */
  async beforeCall(f: Flight): Promise<number> {
    await this.until(() => {
      const target = VersionClock.target(f);
      if (this.version > target)
        throw new Error(
          `async rollouts: the rollout of step ${f.step} needs policy version ${target} but the policy is at ${this.version}`,
        );
      return !this.updating && this.version === target;
    });
    f.running = true;
    return this.version;
  }

  afterCall(f: Flight): void {
    f.running = false;
    f.calls++;
    this.wake();
  }

  close(f: Flight): void {
    f.finished = true;
    this.flights.delete(f);
    this.wake();
  }

  /** Wait until no rollout in flight still needs the current version, then hold the engine for an update. */
  async beginUpdate(): Promise<void> {
    await this.until(
      () =>
        !this.updating &&
        [...this.flights].every((f) => f.finished || (!f.running && VersionClock.target(f) > this.version)),
    );
    this.updating = true;
  }

  endUpdate(): void {
    this.updating = false;
    this.version++;
    this.wake();
  }

  /** Stop: every waiting and future call or update fails (an early stop leaves rollouts waiting for versions). */
  abandon(): void {
    this.abandoned = true;
    this.wake();
  }

  /** Resolves once `ready()` holds (checked now and after every change); rejects if it throws or on `abandon`. */
  private until(ready: () => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        try {
          if (this.abandoned) throw new Error('async rollouts: abandoned (the run stopped with rollouts in flight)');
          if (!ready()) return false;
          resolve();
        } catch (err) {
          reject(err);
        }
        return true;
      };
      if (!check()) this.waiters.push(check);
    });
  }

  private wake(): void {
    const pending = this.waiters;
    this.waiters = [];
    for (const check of pending) if (!check()) this.waiters.push(check);
  }
}

interface Started {
  promise: Promise<CollectedRollout & { versions: Map<string, number> }>;
  groups: EnvGroups;
}

/** Runs StarPO steps with rollouts generated up to `maxStaleness` steps ahead (see the file header). */
export class AsyncRollouts {
  readonly clock: VersionClock;
  private readonly ring: EnvGroups[];
  private readonly started = new Map<number, Started>();
  private nextStart: number;

  constructor(
    private readonly ctx: StepContext,
    private readonly opts: { maxStaleness: number; importanceCap: number; startStep: number; endStep: number },
  ) {
    this.clock = new VersionClock(opts.startStep);
    this.nextStart = opts.startStep + 1;
    // One set of env slots per rollout in flight (steps k..k+n); the context's own is the first.
    if (!ctx.groups || ctx.gateway)
      throw new Error(
        'async rollouts run built-in env entries only (the config check refuses agent entries with trainer.async)',
      );
    this.ring = [
      ctx.groups,
      ...Array.from({ length: opts.maxStaleness }, () => new EnvGroups(envGroupsOptions(ctx.config, 'train'))),
    ];
  }

  /** Step `step`: its rollout (started ahead), then the update with the off-policy correction. */
  async step(step: number): Promise<StepOutput> {
    const tStep = performance.now();
    this.startUpTo(step + this.opts.maxStaleness);
    const s = this.started.get(step);
    if (!s) throw new Error(`async rollouts: step ${step} was never started (next to start: ${this.nextStart})`);
    const t0 = performance.now();
    const collected = await s.promise;
    this.started.delete(step);
    const wait = (performance.now() - t0) / 1000;
    await this.clock.beginUpdate();
    try {
      const current = this.clock.version;
      const out = await starpoUpdate(this.ctx, step, collected, tStep, {
        versionOf: (episode, turn) => collected.versions.get(`${episode}/${turn}`) ?? current,
        current,
        importanceCap: this.opts.importanceCap,
      });
      out.metrics['timing_s/rollout_wait'] = wait;
      return out;
    } finally {
      this.clock.endUpdate();
    }
  }

  /** Abandon rollouts still in flight (after an early stop or a failure), then close the extra env slots. */
  async close(): Promise<void> {
    this.clock.abandon();
    for (const s of this.started.values()) await s.promise.catch(() => undefined);
    for (const g of this.ring.slice(1)) await g.close();
  }

  private startUpTo(last: number): void {
    for (; this.nextStart <= Math.min(last, this.opts.endStep); this.nextStart++) {
      const step = this.nextStart;
      const groups = this.ring[step % this.ring.length]!;
      const flight = this.clock.open(step);
      const versions = new Map<string, number>();
      const clock = this.clock;
      const wrap = (inner: Policy): Policy => ({
        name: inner.name,
        async generate(requests, call) {
          const v = await clock.beforeCall(flight);
          try {
            for (const r of requests) versions.set(`${r.slot.index}/${r.turn}`, v);
            return await inner.generate(requests, call);
          } finally {
            clock.afterCall(flight);
          }
        },
      });
      const promise = collectRollout(this.ctx, step, { groups, wrap })
        .then((c) => ({ ...c, versions }))
        .finally(() => clock.close(flight));
      promise.catch(() => undefined); // awaited by step(); an early failure must not be an unhandled rejection
      this.started.set(step, { promise, groups });
    }
  }
}
