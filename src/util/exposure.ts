// One exposure policy for every server ragen-ts ships (serve, env serve, dashboard, retrieval serve, the training
// gateway): loopback by default; an address beyond loopback needs the server's key or token, or `--insecure`, which is
// then said on stderr. Each server's CLI (and EnvServer, the gateway) asks `checkExposure` before it listens.
import { UsageError } from './errors.js';

/** Whether `host` listens on loopback only (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(h);
}

/** A server about to listen, as `checkExposure` judges it. */
export interface Exposure {
  /** The server, as its messages name it: `ragen serve`. */
  server: string;
  host: string;
  /** The port, for the warning (0 or undefined: not yet known). */
  port?: number;
  /**
   * The server's own access control: `noun` ('API key', 'token'), whether one is `given`, and `how` to give one
   * ('--api-key (or RAGEN_API_KEY)'). Absent for a server that has none (the dashboard, retrieval serve).
   */
  secret?: { noun: string; given: boolean; how: string };
  /** `--insecure` was passed; undefined for a server that offers no such flag (the gateway: loopback only). */
  insecure?: boolean;
}

/**
 * Whether `e` may listen where it asks. Loopback, or a key/token given: undefined. Beyond loopback with `--insecure`
 * and no key: the one line to print on stderr (which server, which address, that anyone who reaches it can use it).
 * Otherwise a UsageError naming the flags that would allow it.
 */
export function checkExposure(e: Exposure): string | undefined {
  if (isLoopback(e.host) || e.secret?.given) return undefined;
  const where = e.port ? `${e.host}:${e.port}` : e.host;
  if (e.insecure === undefined)
    throw new UsageError(`${e.server} listens on loopback only (127.0.0.1), not on \`${e.host}\`.`);
  if (e.insecure)
    return `${e.server}: listening on ${where} with --insecure and no ${e.secret?.noun ?? 'access control'}: anyone who can reach this address can use it.`;
  const fix = e.secret
    ? `set ${e.secret.how}, or pass --insecure on a trusted network`
    : 'pass --insecure on a trusted network (or keep 127.0.0.1 and reach it through an SSH tunnel)';
  throw new UsageError(
    `${e.server} would listen on ${e.host}, beyond loopback, with no ${e.secret?.noun ?? 'access control'}: anyone who can reach the port could use it; ${fix}.`,
  );
}
