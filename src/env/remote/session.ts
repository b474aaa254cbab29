// One server-side session: the env instance a WebSocket connection owns, its episode state machine, and
// the reply to each client message. Free of sockets so the state machine is tested on its own.
import { ResetNeededError, RagenError } from '../../util/index.js';
import type { Env, ResetResult, StepResult } from '../core.js';
import type { ClientMessage, ErrorCode, ObservationData, ServerMessage } from './protocol.js';
import { imageToWire } from './wire-image.js';

/** What handling one message gives: the reply (none for `close`) and whether to close the session. */
export interface Handled {
  reply?: ServerMessage;
  close: boolean;
}

/** Thrown inside `withTimeout` when the env call outlived its limit. */
class StepTimeout extends Error {}

/** Serves one env instance to one client: reset/step/state/close with the server's own order checks. */
export class EnvSession {
  /** 'new' until the first reset, 'running' during an episode, 'ended' after terminated/truncated or an env error. */
  status: 'new' | 'running' | 'ended' = 'new';
  stepCount = 0;
  episodeId: string | null = null;
  lastActive = Date.now();
  private episodes = 0;

  constructor(
    readonly id: number,
    readonly envId: string,
    readonly env: Env,
    private readonly stepTimeoutMs: number,
    /** Wait this long before each reset and step (a benchmarking aid: a slow env or a far-away server). */
    private readonly stepDelayMs = 0,
  ) {}

  /** The reply to `msg`. Never throws: env failures become error replies. */
  async handle(msg: ClientMessage): Promise<Handled> {
    this.lastActive = Date.now();
    switch (msg.type) {
      case 'close':
        return { close: true };
      case 'state':
        return {
          reply: {
            type: 'state',
            data: {
              episode_id: this.episodeId,
              step_count: this.stepCount,
              env: this.envId,
              status: this.status,
              render: this.status === 'new' ? null : this.safeRender(),
            },
          },
          close: false,
        };
      case 'reset':
        return this.reset(msg.data);
      case 'step':
        return this.step(msg.data.text);
    }
  }

  private async reset(data: Extract<ClientMessage, { type: 'reset' }>['data']): Promise<Handled> {
    let r: ResetResult;
    await this.delay();
    try {
      r = await this.withTimeout(() =>
        this.env.reset({
          seed: data.seed ?? 0,
          mode: data.mode ?? 'train',
          ...(data.options ? { options: data.options } : {}),
        }),
      );
    } catch (err) {
      this.status = 'ended';
      return this.failure(err, 'reset');
    }
    this.status = 'running';
    this.stepCount = 0;
    this.episodeId = data.episode_id ?? `${this.id}-${++this.episodes}`;
    const obs = this.observation(r, null, false, false);
    obs.instruction = this.env.instruction;
    obs.legend = this.env.legend;
    obs.observationSpace = this.env.observationSpace ?? null;
    return { reply: { type: 'observation', data: obs }, close: false };
  }

  private async step(action: string): Promise<Handled> {
    if (this.status !== 'running') {
      const message =
        this.status === 'new'
          ? 'Cannot step before reset: send {"type": "reset", "data": {"seed": N}} first.'
          : 'Cannot step after the episode ended (terminated or truncated): send a reset to start a new one.';
      return error('RESET_NEEDED', message);
    }
    let r: StepResult;
    await this.delay();
    try {
      r = await this.withTimeout(() => this.env.step(action));
    } catch (err) {
      this.status = 'ended';
      return this.failure(err, 'step');
    }
    this.stepCount++;
    if (r.terminated || r.truncated) this.status = 'ended';
    return {
      reply: {
        type: 'observation',
        data: this.observation(r, r.reward, r.terminated, r.truncated),
      },
      close: false,
    };
  }

  private observation(
    r: ResetResult | StepResult,
    reward: number | null,
    terminated: boolean,
    truncated: boolean,
  ): ObservationData {
    const names = this.env.actionNames;
    const images = r.images !== undefined && r.images.length > 0 ? { images: r.images.map(imageToWire) } : {};
    const info = r.info;
    return {
      observation: { text: r.observation, ...images },
      reward,
      done: terminated || truncated,
      terminated,
      truncated,
      info,
      render: this.safeRender(),
      actionNames: names === undefined ? null : [...names],
      episode_id: this.episodeId,
      step_count: this.stepCount,
    };
  }

  private safeRender(): string {
    try {
      return this.env.render();
    } catch (err) {
      return `(render failed: ${String(err)})`;
    }
  }

  /** An env failure as a typed reply: order errors, bad options, timeouts (closing) or env bugs. */
  private failure(err: unknown, what: 'reset' | 'step'): Handled {
    if (err instanceof StepTimeout)
      return {
        ...error(
          'STEP_TIMEOUT',
          `${what} took longer than the server's limit of ${this.stepTimeoutMs / 1000} s; the env's state is unknown, so the session is closed. Reconnect and reset.`,
        ),
        close: true,
      };
    if (err instanceof ResetNeededError) return error('RESET_NEEDED', err.message);
    if (err instanceof RagenError) return error('VALIDATION_ERROR', `${what} rejected its input: ${err.message}`);
    return error(
      'EXECUTION_ERROR',
      `The env threw during ${what}: ${err instanceof Error ? err.message : String(err)}. The episode is over; reset to start a new one.`,
    );
  }

  /** The configured per-call latency; a timer, so other sessions run meanwhile as they would beside a slow env. */
  private delay(): Promise<void> | void {
    if (this.stepDelayMs > 0) return new Promise((resolve) => setTimeout(resolve, this.stepDelayMs));
  }

  /** Runs an env call under the per-step limit. A sync env cannot be interrupted, only an async one. */
  private async withTimeout<T>(call: () => T | Promise<T>): Promise<T> {
    const result = call();
    if (!(result instanceof Promise)) return result;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StepTimeout()), this.stepTimeoutMs);
    });
    try {
      return await Promise.race([result, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** An error reply that keeps the session open. */
export function error(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): Handled {
  return { reply: { type: 'error', data: { code, message, ...extra } }, close: false };
}
