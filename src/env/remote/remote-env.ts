// RemoteEnv: the Env contract over one WebSocket session of an env server (ours, the Python bridge, or an
// OpenEnv server whose action and observation carry one text field). One request in flight at a time, as Env is
// sequential.
import WebSocket from 'ws';
import { ConfigError, RagenError, ResetNeededError } from '../../util/index.js';
import type { Env, EnvInfo, ObservationSpace, ResetOptions, ResetResult, RgbImage, StepResult } from '../core.js';
import { authHeaders, clientToken, TOKEN_ENV } from './auth.js';
import {
  parseServerMessage,
  type ClientMessage,
  type ErrorData,
  type ObservationData,
  type ServerMessage,
} from './protocol.js';
import { imageFromWire } from './wire-image.js';

/** A remote env failed in a way the caller cannot fix by changing its input: the connection, a timeout, the server. */
export class RemoteEnvError extends RagenError {
  constructor(
    /** The server's error code, or ours: CONNECTION_FAILED, CONNECTION_LOST, TIMEOUT, PROTOCOL_ERROR. */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Settings of a `RemoteEnv`. The defaults are the documented reconnect/timeout policy. */
export interface RemoteEnvOptions {
  /** Env config overrides, sent as the `config` query parameter and validated by the server. @default {} */
  config?: Record<string, unknown>;
  /** Longest wait for the reply to one reset/step/state before TIMEOUT (the session is then dropped). @default 60 */
  timeoutS?: number;
  /** Longest wait for one connection attempt. @default 10 */
  connectTimeoutS?: number;
  /** Connection attempts at `reset` (0.25 s, 0.5 s, 1 s... between them); a step never reconnects. @default 3 */
  connectAttempts?: number;
  /** Shown before the first reset (the server sends the real ones with every reset). */
  instruction?: string;
  legend?: string;
  actionNames?: readonly string[];
  /** What observations carry, until a reset reply says (the server's `/metadata` has it). @default text only */
  observationSpace?: ObservationSpace;
  /**
   * The action field of a step's `data` and the observation field holding the text. Ours are `text`;
   * for an OpenEnv server, its action/observation models' text fields (its echo env: `message` and
   * `echoed_message`). @default 'text'
   */
  actionKey?: string;
  observationKey?: string;
  /** Where reconnects and lost sessions are logged. @default stderr */
  log?: (line: string) => void;
  /** The server's shared token, sent as `Authorization: Bearer <token>`. @default $RAGEN_ENV_TOKEN */
  token?: string;
}

/** Why a session ended when this client closed it (not worth a log line at the next reset). */
const CLOSED_HERE = 'closed by this client';

/** Ends `close()` without waiting for the server's close handshake longer than this. */
const CLOSE_GRACE_MS = 1000;

/**
 * An env served over the wire. `reset` opens the session if none is open (reconnecting after a
 * server restart or an idle reap); `step` never reconnects: a connection lost mid-episode rejects the
 * pending and every later step with `RemoteEnvError` code `CONNECTION_LOST` (the episode is gone),
 * and a reply slower than `timeoutS` rejects with `TIMEOUT`. Nothing waits forever.
 */
export class RemoteEnv implements Env {
  instruction: string;
  legend: string;
  actionNames: readonly string[] | undefined;
  observationSpace: ObservationSpace | undefined;
  private ws: WebSocket | undefined;
  private pending:
    | { resolve: (m: ServerMessage) => void; reject: (e: Error) => void; timer: NodeJS.Timeout; type: string }
    | undefined;
  /** A typed error the server sent unasked just before closing (CONFIG_ERROR at connect, IDLE_TIMEOUT...). */
  private goodbye: ErrorData | undefined;
  private lastRender = '';
  /** Why the current session ended, for the error of the next step. */
  private lost: string | undefined;
  private everReset = false;
  private episodeRunning = false;
  private readonly timeoutMs: number;
  private readonly log: (line: string) => void;
  /** Sessions opened so far, the current episode's seed and steps: what an error names when a session dies. */
  private sessions = 0;
  private seed: number | undefined;
  private steps = 0;

  constructor(
    /** `ws://host:port/<EnvId>` (or `/ws/<EnvId>`, `/ws?env=<EnvId>`). */
    readonly url: string,
    private readonly options: RemoteEnvOptions = {},
  ) {
    this.instruction = options.instruction ?? '';
    this.legend = options.legend ?? '';
    this.actionNames = options.actionNames;
    this.observationSpace = options.observationSpace;
    this.timeoutMs = (options.timeoutS ?? 60) * 1000;
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  async reset(options: ResetOptions): Promise<ResetResult> {
    const msg: ClientMessage = {
      type: 'reset',
      data: {
        seed: options.seed,
        mode: options.mode ?? 'train',
        ...(options.options ? { options: options.options } : {}),
      },
    };
    this.seed = options.seed;
    this.steps = 0;
    if (!this.isOpen() || this.reaped()) await this.reconnect();
    this.everReset = true;
    let reply = await this.request(msg);
    if (reply.type === 'error' && (reply.data.code === 'IDLE_TIMEOUT' || reply.data.code === 'SERVER_SHUTDOWN')) {
      // Reaped (or the server restarting) just as we asked: a reset loses nothing, so open a new session once.
      this.goodbye = reply.data;
      await this.reconnect();
      reply = await this.request(msg);
    }
    const data = this.observationOf(reply, 'reset');
    if (data.instruction !== undefined) this.instruction = data.instruction;
    if (data.legend !== undefined) this.legend = data.legend;
    if (data.observationSpace !== undefined) this.observationSpace = data.observationSpace ?? undefined;
    this.episodeRunning = true;
    return { observation: this.textOf(data), ...this.imagesOf(data, 'reset'), info: data.info };
  }

  async step(action: string): Promise<StepResult> {
    if (!this.everReset) throw new ResetNeededError('Cannot call step() before reset(): call reset({seed}) first.');
    if (!this.isOpen()) {
      throw new RemoteEnvError(
        'CONNECTION_LOST',
        `The ${this.sessionName()} with ${this.url} is closed (${this.lost ?? 'closed'}); the episode is lost. reset() opens a new session.`,
      );
    }
    this.steps++;
    const reply = await this.request({
      type: 'step',
      data: { [this.options.actionKey ?? 'text']: action } as { text: string },
    });
    const data = this.observationOf(reply, 'step');
    if (data.done) this.episodeRunning = false;
    return {
      observation: this.textOf(data),
      ...this.imagesOf(data, 'step'),
      reward: data.reward ?? 0,
      terminated: data.terminated ?? data.done,
      truncated: data.truncated ?? false,
      info: data.info,
    };
  }

  render(): string {
    return this.lastRender;
  }

  close(): void {
    const ws = this.ws;
    this.ws = undefined;
    this.lost = CLOSED_HERE;
    this.episodeRunning = false;
    if (!ws || ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) return;
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'close', data: {} }));
    ws.close(1000);
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** `session #2 (episode seed 1003, after 4 steps)`: which session of this env, in words. */
  private sessionName(): string {
    return `session #${this.sessions}${this.seed !== undefined ? ` (episode seed ${this.seed}, after ${this.steps} step${this.steps === 1 ? '' : 's'})` : ''}`;
  }

  private isOpen(): boolean {
    return this.ws !== undefined && this.ws.readyState === WebSocket.OPEN;
  }

  /** The server said it is closing this session (its close frame may not have arrived yet). */
  private reaped(): boolean {
    return (
      this.goodbye !== undefined && (this.goodbye.code === 'IDLE_TIMEOUT' || this.goodbye.code === 'SERVER_SHUTDOWN')
    );
  }

  /** Drops the current socket (if any) and opens a new session. */
  private async reconnect(): Promise<void> {
    const old = this.ws;
    if (old) {
      this.ws = undefined;
      old.terminate();
    }
    await this.connect();
  }

  private async connect(): Promise<void> {
    const attempts = this.options.connectAttempts ?? 3;
    let last = '';
    if (this.lost !== undefined && this.lost !== CLOSED_HERE && this.everReset)
      this.log(`[remote-env] ${this.url}: reconnecting (the previous session ended: ${this.lost})`);
    for (let k = 0; k < attempts; k++) {
      if (k > 0) {
        this.log(`[remote-env] ${this.url}: connection attempt ${k} failed (${last}); retrying`);
        await new Promise((r) => setTimeout(r, 250 * 2 ** (k - 1)));
      }
      try {
        this.goodbye = undefined;
        this.ws = await this.open();
        this.sessions++;
        this.lost = undefined;
        return;
      } catch (err) {
        last = (err as Error).message;
      }
    }
    const episode = this.seed !== undefined ? ` for a new session (episode seed ${this.seed})` : '';
    throw new RemoteEnvError(
      'CONNECTION_FAILED',
      `Could not connect to the env server at ${this.url}${episode} after ${attempts} attempt(s): ${last}. Is \`ragen env serve <EnvId> --port <N>\` running there?`,
    );
  }

  private open(): Promise<WebSocket> {
    const config = this.options.config ?? {};
    const url = new URL(this.url);
    if (Object.keys(config).length > 0) url.searchParams.set('config', JSON.stringify(config));
    const ws = new WebSocket(url, {
      handshakeTimeout: (this.options.connectTimeoutS ?? 10) * 1000,
      headers: authHeaders(this.options.token ?? clientToken()),
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => {
        ws.removeAllListeners('error');
        ws.on('error', (err) => (this.lost = err.message));
        ws.on('message', (raw) => this.onMessage(ws, raw.toString()));
        ws.on('close', (code, reason) => this.onClose(ws, code, reason.toString()));
        resolve(ws);
      });
      ws.once('error', (err) => reject(err));
      ws.once('unexpected-response', (_req, res) => {
        const why = res.statusCode === 401 ? ` (it wants its token: set ${TOKEN_ENV} to the server's token)` : '';
        reject(new Error(`the server answered the WebSocket upgrade with HTTP ${res.statusCode}${why}`));
      });
    });
  }

  private onMessage(ws: WebSocket, raw: string): void {
    const parsed = parseServerMessage(raw);
    const pending = this.pending;
    if (!parsed.ok) {
      this.lost = parsed.message;
      ws.terminate();
      return pending?.reject(new RemoteEnvError('PROTOCOL_ERROR', `${this.url}: ${parsed.message}`));
    }
    if (!pending) {
      // Unsolicited: the server's goodbye (IDLE_TIMEOUT, SERVER_SHUTDOWN...) before it closes.
      if (parsed.message.type === 'error') {
        this.goodbye = parsed.message.data;
        this.lost = `${parsed.message.data.code}: ${parsed.message.data.message}`;
      }
      return;
    }
    this.pending = undefined;
    clearTimeout(pending.timer);
    pending.resolve(parsed.message);
  }

  private onClose(ws: WebSocket, code: number, reason: string): void {
    if (this.ws !== undefined && this.ws !== ws) return; // a socket we already replaced: nothing of it is waiting
    this.ws = undefined;
    this.lost ??= `the server closed the connection (code ${code}${reason ? `, ${reason}` : ''})`;
    const pending = this.pending;
    if (pending) {
      this.pending = undefined;
      clearTimeout(pending.timer);
      if (this.goodbye) pending.reject(this.errorOf(this.goodbye, pending.type));
      else
        pending.reject(
          new RemoteEnvError(
            'CONNECTION_LOST',
            `The env server at ${this.url} closed the ${this.sessionName()} while its ${pending.type} was waiting (${this.lost}); the episode is lost. reset() opens a new session.`,
          ),
        );
    } else if (this.episodeRunning) {
      this.log(`[remote-env] ${this.url}: ${this.sessionName()} lost mid-episode (${this.lost})`);
    }
    this.episodeRunning = false;
  }

  private request(msg: ClientMessage): Promise<ServerMessage> {
    const ws = this.ws!;
    return new Promise<ServerMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        this.lost = `no reply to ${msg.type} within ${this.timeoutMs / 1000} s`;
        ws.terminate(); // the session's state is unknown now: drop it
        reject(
          new RemoteEnvError(
            'TIMEOUT',
            `The env server at ${this.url} did not answer ${msg.type} within ${this.timeoutMs / 1000} s (RemoteEnvOptions.timeoutS); the session is dropped and the episode lost.`,
          ),
        );
      }, this.timeoutMs);
      if (this.goodbye) {
        clearTimeout(timer);
        return reject(this.errorOf(this.goodbye, msg.type)); // refused before we asked: the server is closing
      }
      this.pending = { resolve, reject, timer, type: msg.type };
      ws.send(JSON.stringify(msg));
    });
  }

  /**
   * The exception for a server error: the caller's mistakes as ResetNeededError / ConfigError, the rest RemoteEnvError.
   */
  private errorOf(data: ErrorData, what: string): Error {
    const { code, message } = data;
    if (code === 'RESET_NEEDED') return new ResetNeededError(message);
    if (code === 'VALIDATION_ERROR' || code === 'CONFIG_ERROR' || code === 'UNKNOWN_ENV')
      return new ConfigError(`${this.url}: ${message}`);
    return new RemoteEnvError(code, `The env server at ${this.url} answered ${what} with ${code}: ${message}`);
  }

  private textOf(data: ObservationData): string {
    return (data.observation as unknown as Record<string, string>)[this.options.observationKey ?? 'text']!;
  }

  /** `{images}` of an observation that carries any, decoded; a malformed image is the server's PROTOCOL_ERROR. */
  private imagesOf(data: ObservationData, what: 'reset' | 'step'): { images?: RgbImage[] } {
    const wire = (data.observation as { images?: unknown }).images;
    if (wire === undefined || wire === null) return {};
    const where = `The env server at ${this.url} answered ${what} with an observation whose`;
    try {
      if (!Array.isArray(wire)) throw new Error(`${where} \`images\` is not an array`);
      return { images: wire.map((w, i) => imageFromWire(w, `${where} image ${i}`)) };
    } catch (err) {
      throw new RemoteEnvError('PROTOCOL_ERROR', (err as Error).message);
    }
  }

  /** The observation data of a reply, or the reply's error as the matching exception. */
  private observationOf(reply: ServerMessage, what: 'reset' | 'step'): ObservationData {
    if (reply.type === 'error') {
      if (reply.data.code === 'RESET_NEEDED') this.episodeRunning = false;
      throw this.errorOf(reply.data, what);
    }
    const key = this.options.observationKey ?? 'text';
    if (
      reply.type !== 'observation' ||
      typeof (reply.data.observation as Record<string, unknown> | undefined)?.[key] !== 'string'
    ) {
      throw new RemoteEnvError(
        'PROTOCOL_ERROR',
        `The env server at ${this.url} answered ${what} with ${JSON.stringify(reply).slice(0, 120)}, not an observation with a string observation.${key} (RemoteEnvOptions.observationKey).`,
      );
    }
    const d = reply.data;
    this.lastRender = typeof d.render === 'string' ? d.render : this.textOf(d);
    if (d.actionNames !== undefined) this.actionNames = d.actionNames === null ? undefined : d.actionNames;
    d.info = normalizeInfo(d.info);
    return d;
  }
}

/** Info from a server that may not send our extension (an OpenEnv server): the three flags default to sane values. */
function normalizeInfo(info: unknown): EnvInfo {
  const raw = typeof info === 'object' && info !== null ? (info as Record<string, unknown>) : {};
  const out: EnvInfo = { success: false, actionIsValid: true, actionIsEffective: true };
  for (const [k, v] of Object.entries(raw))
    if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') out[k] = v;
  return out;
}
