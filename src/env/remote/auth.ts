// The env server's shared token: clients send `Authorization: Bearer <token>` (RAGEN_ENV_TOKEN), the server compares
// digests in constant time at the WebSocket upgrade and on HTTP routes; and log text from the wire made inert.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
export { isLoopback } from '../../util/index.js';

/** The environment variable both sides read the token from (`ragen env serve --token` sets the server's too). */
export const TOKEN_ENV = 'RAGEN_ENV_TOKEN';

/** The token a client sends: RAGEN_ENV_TOKEN, or undefined. */
export function clientToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const t = env[TOKEN_ENV];
  return t === undefined || t === '' ? undefined : t;
}

/** Headers carrying `token` (none without one). */
export function authHeaders(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/**
 * Whether the request's bearer token equals `token`; compared as SHA-256 digests, so in constant time whatever the
 * lengths.
 */
export function tokenMatches(headers: IncomingHttpHeaders, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(headers.authorization ?? '');
  if (!m) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(m[1]!), digest(token));
}

/**
 * `text` with every control character (C0, DEL, C1: ESC sequences, carriage returns, bells) written as `\xNN` or
 * `\uNNNN`, so bytes a client sent cannot drive the operator's terminal when they are logged.
 */
export function escapeControl(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
