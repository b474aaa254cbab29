// `remote:ws://host:port/<EnvId>` env ids: read the server's /metadata once, then register a spec whose
// envs are RemoteEnvs, so configs name a served env wherever they name a local one.
import { z } from 'zod';
import { ConfigError } from '../../util/index.js';
import type { ObservationSpace } from '../core.js';
import { listEnvs, registerEnv, registerEnvAlias, resolveEnvId } from '../registry.js';
import { RemoteEnv, RemoteEnvError, type RemoteEnvOptions } from './remote-env.js';
import { authHeaders, clientToken, TOKEN_ENV } from './auth.js';

/** The prefix that marks a remote env id in configs and on the command line. */
export const REMOTE_PREFIX = 'remote:';

/** Whether `tag` names a remote env (`remote:ws://...`). */
export function isRemoteEnvId(tag: string): boolean {
  return tag.startsWith(REMOTE_PREFIX);
}

/** One env of a server's `/metadata` (see EnvServer.metadata). */
interface RemoteEnvMetadata {
  id: string;
  description: string;
  instruction: string;
  legend: string;
  actionNames: string[] | null;
  /** Absent from servers before protocol 2; null: text only. */
  observationSpace?: ObservationSpace | null;
  maxActionsPerEpisode: number;
  config: Record<string, unknown>;
}

/** The WebSocket URL, the HTTP base and the env id path of a `remote:` tag. */
export function parseRemoteTag(tag: string): {
  wsUrl: string;
  httpBase: string;
  envName: string | null;
  hostPort: string;
} {
  const raw = tag.slice(REMOTE_PREFIX.length);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      `Bad remote env \`${tag}\`: \`${raw}\` is not a URL. Write remote:ws://<host>:<port>/<EnvId>, e.g. remote:ws://127.0.0.1:8765/Sokoban.`,
    );
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new ConfigError(`Bad remote env \`${tag}\`: the URL must start with ws:// or wss://, got ${url.protocol}//.`);
  const parts = url.pathname.split('/').filter((p) => p !== '');
  const envName =
    parts.length === 0 || (parts.length === 1 && parts[0] === 'ws') ? url.searchParams.get('env') : parts.at(-1)!;
  return {
    wsUrl: url.toString(),
    httpBase: `${url.protocol === 'wss:' ? 'https' : 'http'}://${url.host}`,
    envName,
    hostPort: url.host,
  };
}

/**
 * Registers the remote env `tag` (`remote:ws://host:port/<EnvId>`) under the id `<EnvId>@host:port`
 * with `tag` as an alias, from the server's `/metadata`; returns the id. Already registered: returns it.
 * Config keys are the server's (checked here, values checked by the server when a session opens).
 */
export async function registerRemoteEnv(
  tag: string,
  options: Omit<RemoteEnvOptions, 'config' | 'instruction' | 'legend' | 'actionNames' | 'observationSpace'> = {},
): Promise<string> {
  try {
    return resolveEnvId(tag);
  } catch {
    // not registered yet
  }
  const { wsUrl, httpBase, envName, hostPort } = parseRemoteTag(tag);
  const meta = await fetchMetadata(
    httpBase,
    tag,
    (options.connectTimeoutS ?? 10) * 1000,
    options.token ?? clientToken(),
  );
  const envs = meta.envs;
  const picked =
    envName === null
      ? envs.length === 1
        ? envs[0]
        : undefined
      : envs.find((e) => e.id.toLowerCase() === envName.toLowerCase());
  if (!picked) {
    throw new ConfigError(
      `The env server at ${httpBase} serves ${envs.map((e) => e.id).join(', ')}, not \`${envName ?? '(none named)'}\`. Write remote:ws://${hostPort}/<EnvId> with one of them.`,
    );
  }
  const id = `${picked.id}@${hostPort}`;
  if (!listEnvs().some((e) => e.id === id)) {
    const keys = Object.keys(picked.config ?? {});
    const space = picked.observationSpace ?? undefined;
    registerEnv(id, {
      description: `${picked.description} (served at ${httpBase})`,
      schema: z.object(Object.fromEntries(keys.map((k) => [k, z.unknown().optional()]))) as unknown as z.ZodType<
        Record<string, unknown>
      > & { shape: Record<string, z.ZodType> },
      maxActionsPerEpisode: picked.maxActionsPerEpisode,
      ...(space ? { observationSpace: () => space } : {}),
      create: (config) => {
        const given = Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
        return new RemoteEnv(wsUrl, {
          ...options,
          config: given,
          instruction: picked.instruction,
          legend: picked.legend,
          ...(picked.actionNames ? { actionNames: picked.actionNames } : {}),
          ...(space ? { observationSpace: space } : {}),
        });
      },
    });
  }
  registerEnvAlias(tag, id);
  return id;
}

/** Registers every `remote:` tag among `tags` (the others are left to the registry). */
export async function registerRemoteEnvs(
  tags: Iterable<string>,
  options?: Parameters<typeof registerRemoteEnv>[1],
): Promise<void> {
  for (const tag of new Set(tags)) if (isRemoteEnvId(tag)) await registerRemoteEnv(tag, options);
}

async function fetchMetadata(
  httpBase: string,
  tag: string,
  timeoutMs: number,
  token: string | undefined,
): Promise<{ envs: RemoteEnvMetadata[] }> {
  let body: unknown;
  try {
    const res = await fetch(`${httpBase}/metadata`, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: authHeaders(token),
    });
    if (res.status === 401) {
      throw new RemoteEnvError(
        'UNAUTHORIZED',
        `The env server at ${httpBase} wants its token for the remote env \`${tag}\`${token === undefined ? '' : ', and refused the one given'}: set ${TOKEN_ENV} to the token the server was started with.`,
      );
    }
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    body = await res.json();
  } catch (err) {
    if (err instanceof RemoteEnvError) throw err;
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new RemoteEnvError(
      'CONNECTION_FAILED',
      `Could not read ${httpBase}/metadata for the remote env \`${tag}\` (${cause}). Start the server first, e.g. \`ragen env serve <EnvId> --port ${new URL(httpBase).port || 8765}\`.`,
    );
  }
  const envs = (body as { envs?: unknown }).envs;
  if (
    !Array.isArray(envs) ||
    envs.some((e) => typeof e?.id !== 'string' || typeof e?.maxActionsPerEpisode !== 'number')
  ) {
    throw new RemoteEnvError(
      'PROTOCOL_ERROR',
      `${httpBase}/metadata does not list its envs (\`envs: [{id, maxActionsPerEpisode, ...}]\`), so it is not a ragen-ts env server or Python bridge; use RemoteEnv directly for other servers.`,
    );
  }
  return { envs: envs as RemoteEnvMetadata[] };
}
