// In-process agents: an exported async function called once per episode inside the trainer. It runs in its own
// async context, so an error it leaves unhandled (a floating rejected promise, a throw in a timer) is logged against
// its episode instead of taking the trainer down; at its time budget its signal fires and it is abandoned.
import { AsyncLocalStorage } from 'node:async_hooks';

/** What an in-process agent is called with. */
export interface AgentContext {
  /**
   * The episode's OpenAI base URL (`…/episodes/<secret>/v1`, the secret this episode's alone): give it to your client
   * as `baseURL`.
   */
  baseUrl: string;
  /** A dummy key (clients insist on one; the gateway does not check it). */
  apiKey: string;
  /** `POST {"reward": number}` here, or return the reward. */
  rewardUrl: string;
  seed: number;
  group: number;
  episodeId: string;
  /** Aborted at the episode's time budget: pass it to your client's calls and stop. */
  signal: AbortSignal;
}

/** An in-process agent: returns its reward (a number or `{reward}`), or nothing when it reported it over HTTP. */
export type AgentFunction = (ctx: AgentContext) => unknown;

/** How a call ended: returned a value, threw (or rejected), or ran past its budget (abandoned). */
export type CallEnd = { kind: 'returned'; value: unknown } | { kind: 'threw'; error: unknown } | { kind: 'timeout' };

interface Owner {
  episodeId: string;
  log: (line: string) => void;
}

const owners = new AsyncLocalStorage<Owner>();
let guarded = false;

/**
 * Call `fn` in the episode's async context; resolves with how it ended, at the latest `timeoutS` seconds after the
 * call (then `ctx.signal` is aborted and whatever the function still does is ignored). Never rejects.
 */
export function callAgent(
  fn: AgentFunction,
  ctx: Omit<AgentContext, 'signal'>,
  timeoutS: number,
  log: (line: string) => void,
): Promise<CallEnd> {
  guard();
  const abort = new AbortController();
  const owner: Owner = { episodeId: ctx.episodeId, log };
  return new Promise<CallEnd>((resolve) => {
    const timer = setTimeout(() => {
      abort.abort(new Error(`episode ${ctx.episodeId} ran past its ${timeoutS}s budget`));
      resolve({ kind: 'timeout' });
    }, timeoutS * 1000);
    // The handlers stay attached after a timeout, so a late rejection of an abandoned call is handled (and ignored).
    Promise.resolve()
      .then(() => owners.run(owner, () => fn({ ...ctx, signal: abort.signal })))
      .then(
        (value) => resolve({ kind: 'returned', value }),
        (error: unknown) => resolve({ kind: 'threw', error }),
      )
      .finally(() => clearTimeout(timer));
  });
}

/** The agent's reward from its return value: a finite number or `{reward: <finite number>}`; else undefined. */
export function returnedReward(value: unknown): number | undefined {
  const r =
    typeof value === 'object' && value !== null && 'reward' in value ? (value as { reward: unknown }).reward : value;
  return typeof r === 'number' && Number.isFinite(r) ? r : undefined;
}

/**
 * Text of a thrown value for the log: `Name: message` on the first line, then its stack frames; the first `keep`
 * characters.
 */
export function errorText(err: unknown, keep: number): string {
  if (!(err instanceof Error)) return `thrown value ${describeValue(err)}`.slice(0, keep);
  const frames = (err.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l));
  return [`${err.name}: ${err.message}`, ...frames].join('\n').slice(0, keep);
}

/** A value as a log line shows it (JSON where it can, bounded). */
export function describeValue(v: unknown): string {
  let text: string;
  try {
    text =
      typeof v === 'number' || v === undefined || typeof v === 'function' || typeof v === 'bigint'
        ? String(v)
        : (JSON.stringify(v) ?? String(v));
  } catch {
    text = String(v);
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Process-wide, installed with the first in-process agent: an unhandled rejection or uncaught exception raised in an
 * agent's async context is logged against its episode and goes no further. Anything else keeps Node's default
 * (the process ends with the error) unless another listener takes it.
 */
function guard(): void {
  if (guarded) return;
  guarded = true;
  process.on('unhandledRejection', (reason) => {
    const owner = owners.getStore();
    if (owner)
      return owner.log(
        `episode ${owner.episodeId}: the in-process agent left a promise rejected and unhandled (ignored): ${errorText(reason, 500)}`,
      );
    if (process.listenerCount('unhandledRejection') === 1) throw reason; // Node's default: an uncaught exception
  });
  process.on('uncaughtException', (err) => {
    const owner = owners.getStore();
    if (owner)
      return owner.log(
        `episode ${owner.episodeId}: the in-process agent threw outside its promise (ignored): ${errorText(err, 500)}`,
      );
    if (process.listenerCount('uncaughtException') === 1) {
      console.error(err); // Node's default for an uncaught exception: print it and exit 1
      process.exit(1);
    }
  });
}
