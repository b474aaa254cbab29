// The env wire protocol: OpenEnv's WebSocket message shape ({type, data} both ways) with our extensions.
// Shared by the server (`ragen env serve`), the client (`RemoteEnv`) and mirrored by python/ragen_env_bridge.py.
import type { EnvInfo, EnvMode, ObservationSpace } from '../core.js';
import type { WireImage } from './wire-image.js';

/**
 * Version of our extensions; `/metadata` reports it so clients can tell what a server speaks. 2: observations may carry
 * images (`observation.images`), and `observationSpace` is in `/metadata` and reset replies.
 */
export const PROTOCOL_VERSION = 2;

/**
 * Error codes of `{type: "error", data: {code, message}}`. The first six are OpenEnv's own; the rest
 * are ours. A session survives every error except those marked "closes" (the server then closes it).
 */
export type ErrorCode =
  | 'INVALID_JSON' // the message is not JSON (garbage, truncated)
  | 'UNKNOWN_TYPE' // `type` is none of reset, step, state, close
  | 'VALIDATION_ERROR' // the message has the wrong shape (no `data.text` in a step, a non-integer seed...)
  | 'EXECUTION_ERROR' // the env threw; the episode is over (reset to go on)
  | 'CAPACITY_REACHED' // closes: the server holds its maximum of sessions
  | 'FACTORY_ERROR' // closes: the env could not be created
  | 'RESET_NEEDED' // a step before the first reset or after the episode ended
  | 'MESSAGE_TOO_LARGE' // the message is over the server's byte limit
  | 'STEP_TIMEOUT' // closes: reset/step took longer than the server's limit (the env state is unknown)
  | 'UNKNOWN_ENV' // closes: the URL names no served env
  | 'CONFIG_ERROR' // closes: the `config` query parameter is not valid for the env
  | 'IDLE_TIMEOUT' // closes: no message for the server's idle limit
  | 'SERVER_SHUTDOWN'; // closes: the server is stopping

/** The codes after which the server closes the session. */
export const CLOSING_CODES: ReadonlySet<ErrorCode> = new Set([
  'CAPACITY_REACHED',
  'FACTORY_ERROR',
  'STEP_TIMEOUT',
  'UNKNOWN_ENV',
  'CONFIG_ERROR',
  'IDLE_TIMEOUT',
  'SERVER_SHUTDOWN',
]);

/** `data` of a `reset`: OpenEnv's `seed` and `episode_id`, plus our `mode` and `options`. */
export interface ResetData {
  seed?: number;
  episode_id?: string;
  /** @default 'train' */
  mode?: EnvMode;
  /** Env-specific reset options (`ResetOptions.options`). */
  options?: Record<string, unknown>;
}

/** `data` of a `step`: the action (OpenEnv's action model with one field, `text`). */
export interface StepData {
  text: string;
}

export type ClientMessage =
  | { type: 'reset'; data: ResetData }
  | { type: 'step'; data: StepData }
  | { type: 'state'; data: Record<string, unknown> }
  | { type: 'close'; data: Record<string, unknown> };

/**
 * `data` of an `observation` reply. OpenEnv's part: `observation` (an object; ours holds `text` and, for an env with
 * images, `images`), `reward` (null after reset) and `done` (terminated or truncated). Our extension, which OpenEnv
 * clients ignore: `terminated`, `truncated`, `info` (with `success`, `actionIsValid`,
 * `actionIsEffective`), `render`, `actionNames`, and after reset `instruction`, `legend` and `observationSpace`.
 */
export interface ObservationData {
  /** `images`: the observation's images as base64 PNGs; absent when it has none. */
  observation: { text: string; images?: WireImage[] };
  reward: number | null;
  done: boolean;
  terminated: boolean;
  truncated: boolean;
  info: EnvInfo;
  /** `Env.render()` after this reset/step. */
  render: string;
  /** The discrete action names now in force, or null for free text. */
  actionNames: string[] | null;
  /** Only in reset replies. */
  instruction?: string;
  /** Only in reset replies. */
  legend?: string;
  /** Only in reset replies: what the env's observations carry (null: text only). */
  observationSpace?: ObservationSpace | null;
  episode_id: string | null;
  step_count: number;
}

/** `data` of a `state` reply: OpenEnv's `episode_id` and `step_count`, plus ours. */
export interface StateData {
  episode_id: string | null;
  step_count: number;
  env: string;
  /** 'new' (never reset), 'running' or 'ended'. */
  status: 'new' | 'running' | 'ended';
  render: string | null;
}

export interface ErrorData {
  code: ErrorCode;
  message: string;
  [key: string]: unknown;
}

export type ServerMessage =
  | { type: 'observation'; data: ObservationData }
  | { type: 'state'; data: StateData }
  | { type: 'error'; data: ErrorData };

/** A parsed client message, or why it is not one (expected failures are values). */
export type ParseResult = { ok: true; message: ClientMessage } | { ok: false; code: ErrorCode; message: string };

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Parses and validates one client message (text). Never throws. */
export function parseClientMessage(raw: string): ParseResult {
  let msg: unknown;
  try {
    msg = JSON.parse(raw);
  } catch (err) {
    return {
      ok: false,
      code: 'INVALID_JSON',
      message: `Invalid JSON (${(err as Error).message}); send {"type": "reset"|"step"|"state"|"close", "data": {...}}.`,
    };
  }
  if (!isObject(msg))
    return {
      ok: false,
      code: 'VALIDATION_ERROR',
      message: `A message must be a JSON object, got ${Array.isArray(msg) ? 'an array' : typeof msg}.`,
    };
  const type = msg.type;
  const data = msg.data ?? {};
  if (!isObject(data))
    return {
      ok: false,
      code: 'VALIDATION_ERROR',
      message: `\`data\` must be an object, got ${JSON.stringify(data).slice(0, 40)}.`,
    };
  switch (type) {
    case 'reset':
      return checkReset(data);
    case 'step':
      if (typeof data.text !== 'string') {
        return {
          ok: false,
          code: 'VALIDATION_ERROR',
          message: `A step needs \`data.text\`, the action as a string; got ${JSON.stringify(data.text)?.slice(0, 40) ?? 'nothing'}.`,
        };
      }
      return { ok: true, message: { type, data: { text: data.text } } };
    case 'state':
    case 'close':
      return { ok: true, message: { type, data } };
    default:
      return {
        ok: false,
        code: 'UNKNOWN_TYPE',
        message: `Unknown message type ${JSON.stringify(type)?.slice(0, 40)}; use reset, step, state or close.`,
      };
  }
}

function checkReset(data: Record<string, unknown>): ParseResult {
  const out: ResetData = {};
  if (data.seed !== undefined && data.seed !== null) {
    if (typeof data.seed !== 'number' || !Number.isSafeInteger(data.seed))
      return {
        ok: false,
        code: 'VALIDATION_ERROR',
        message: `\`data.seed\` must be an integer, got ${JSON.stringify(data.seed).slice(0, 40)}.`,
      };
    out.seed = data.seed;
  }
  if (data.mode !== undefined) {
    if (data.mode !== 'train' && data.mode !== 'val')
      return {
        ok: false,
        code: 'VALIDATION_ERROR',
        message: `\`data.mode\` must be "train" or "val", got ${JSON.stringify(data.mode).slice(0, 40)}.`,
      };
    out.mode = data.mode;
  }
  if (data.options !== undefined) {
    if (!isObject(data.options))
      return { ok: false, code: 'VALIDATION_ERROR', message: '`data.options` must be an object.' };
    out.options = data.options;
  }
  if (data.episode_id !== undefined && data.episode_id !== null) {
    if (typeof data.episode_id !== 'string' || data.episode_id.length > 255)
      return {
        ok: false,
        code: 'VALIDATION_ERROR',
        message: '`data.episode_id` must be a string of at most 255 characters.',
      };
    out.episode_id = data.episode_id;
  }
  return { ok: true, message: { type: 'reset', data: out } };
}

/** Parses one server message (text); a malformed one is an error value, never an exception. */
export function parseServerMessage(raw: string): { ok: true; message: ServerMessage } | { ok: false; message: string } {
  let msg: unknown;
  try {
    msg = JSON.parse(raw);
  } catch (err) {
    return { ok: false, message: `the server sent invalid JSON (${(err as Error).message})` };
  }
  if (!isObject(msg) || !isObject(msg.data))
    return { ok: false, message: `the server sent a message without a \`data\` object: ${raw.slice(0, 80)}` };
  if (msg.type === 'observation' || msg.type === 'state') return { ok: true, message: msg as unknown as ServerMessage };
  if (msg.type === 'error') {
    const data = msg.data as Record<string, unknown>;
    return {
      ok: true,
      message: {
        type: 'error',
        data: { ...data, code: String(data.code ?? 'UNKNOWN') as ErrorCode, message: String(data.message ?? '') },
      },
    };
  }
  return { ok: false, message: `the server sent an unknown message type ${JSON.stringify(msg.type)}` };
}

/**
 * Where a WebSocket URL path points: `/ws` (the server's only env, or `?env=<id>`), `/ws/<id>`, or
 * `/<id>` (the short form of `remote:ws://host:port/<id>`). Returns the env id named, or null for `/ws`.
 */
export function envIdOfPath(pathname: string, query: URLSearchParams): string | null {
  const parts = pathname
    .split('/')
    .filter((p) => p !== '')
    .map(safeDecode);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'ws')) return query.get('env');
  if (parts.length === 2 && parts[0] === 'ws') return parts[1]!;
  if (parts.length === 1) return parts[0]!;
  return parts.join('/'); // unknown: reported as such by the server
}

/** `decodeURIComponent` that leaves a malformed escape (`%zz`) as it is instead of throwing. */
function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part; // a hostile path: the server then reports it as an unknown env
  }
}
