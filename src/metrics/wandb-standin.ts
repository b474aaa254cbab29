// For tests: a local stand-in of the part of the W&B HTTP API that `@wandb/sdk` uses (GraphQL `viewer` and
// `upsertBucket` at /graphql, then POSTs to /files/<entity>/<project>/<run>/file_stream), recording what it receives.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stand-in received. */
export interface WandbSeen {
  upserts: Record<string, unknown>[];
  /** wandb-history.jsonl rows, in order. */
  history: Record<string, number>[];
  /** The final file_stream posts ({complete, exitcode}). */
  finished: { complete: boolean; exitcode: number }[];
  paths: string[];
}

export interface WandbStandIn {
  /** For WANDB_BASE_URL. */
  url: string;
  /** The one API key it accepts (others get 401). */
  key: string;
  seen: WandbSeen;
  reset(): void;
  close(): Promise<void>;
  /** Stop at once, dropping open connections: W&B lost mid-run. */
  kill(): Promise<void>;
}

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => resolve(text));
  });

/** Start the stand-in on 127.0.0.1 at a free port; it answers as the entity `tester`. */
export async function startWandbStandIn(): Promise<WandbStandIn> {
  const key = 'k'.repeat(40);
  const fresh = (): WandbSeen => ({ upserts: [], history: [], finished: [], paths: [] });
  const state = { seen: fresh() };
  const server = createServer(async (req, res) => {
    const json = (status: number, data: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(data));
    };
    if (req.headers.authorization !== `Basic ${Buffer.from(`api:${key}`).toString('base64')}`)
      return json(401, { errors: [{ message: 'bad key' }] });
    const msg = JSON.parse(await body(req));
    const seen = state.seen;
    seen.paths.push(req.url!);
    if (req.url === '/graphql' && /viewer/.test(msg.query))
      return json(200, { data: { viewer: { id: 'v', entity: 'tester', flags: '', teams: { edges: [] } } } });
    if (req.url === '/graphql' && /upsertBucket/.test(msg.query)) {
      seen.upserts.push(msg.variables);
      const v = msg.variables;
      return json(200, {
        data: {
          upsertBucket: {
            inserted: true,
            bucket: {
              id: 'b',
              name: v.name,
              displayName: v.displayName,
              description: null,
              config: v.config,
              sweepName: null,
              project: { id: 'p', name: v.project, entity: { id: 'e', name: v.entity } },
            },
          },
        },
      });
    }
    if (req.url?.endsWith('/file_stream')) {
      for (const line of msg.files?.['wandb-history.jsonl']?.content ?? []) seen.history.push(JSON.parse(line));
      if (msg.complete !== undefined) seen.finished.push(msg);
      return json(200, {});
    }
    json(404, {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    key,
    get seen() {
      return state.seen;
    },
    reset: () => void (state.seen = fresh()),
    close: () => new Promise<void>((r) => server.close(() => r())),
    kill: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** Set W&B's environment variables for a test; returns a function that restores them. */
export function wandbEnv(vars: { WANDB_API_KEY?: string; WANDB_BASE_URL?: string; WANDB_MODE?: string }): () => void {
  const saved = {
    WANDB_API_KEY: process.env.WANDB_API_KEY,
    WANDB_BASE_URL: process.env.WANDB_BASE_URL,
    WANDB_MODE: process.env.WANDB_MODE,
  };
  Object.assign(process.env, vars);
  return () => {
    for (const [name, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[name];
      else process.env[name] = v;
    }
  };
}
