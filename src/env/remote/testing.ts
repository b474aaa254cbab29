// Test helpers for the env server: a raw WebSocket client that sends any bytes and collects typed replies.
import WebSocket from 'ws';
import type { ServerMessage } from './protocol.js';

/** A raw protocol client: `send` anything, `next()` awaits the next reply, `closed` resolves with the close code. */
export class RawClient {
  readonly replies: ServerMessage[] = [];
  readonly closed: Promise<number>;
  private waiters: ((m: ServerMessage) => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as ServerMessage;
      const w = this.waiters.shift();
      if (w) w(msg);
      else this.replies.push(msg);
    });
    this.closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
  }

  static async open(url: string): Promise<RawClient> {
    const ws = new WebSocket(url);
    const client = new RawClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return client;
  }

  send(data: string | Buffer | object): void {
    this.ws.send(typeof data === 'string' || Buffer.isBuffer(data) ? data : JSON.stringify(data));
  }

  /** The next reply (fails after `ms`). */
  next(ms = 5000): Promise<ServerMessage> {
    const queued = this.replies.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms`)), ms);
      this.waiters.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }

  /** Send and await the reply. */
  async ask(data: string | Buffer | object): Promise<ServerMessage> {
    this.send(data);
    return this.next();
  }
}

/** The error code of a reply, or its type when it is not an error. */
export function codeOf(m: ServerMessage): string {
  return m.type === 'error' ? m.data.code : m.type;
}
