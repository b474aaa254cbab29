// env/remote: environments over the wire. The server (`ragen env serve`), the RemoteEnv client, `remote:` ids
// and the protocol's types. Node-only (node:http, ws), so it is not re-exported by src/env/index.ts.
export * from './protocol.js';
export { EnvServer, type EnvServerOptions, type EnvServerStats } from './server.js';
export { EnvSession } from './session.js';
export { RemoteEnv, RemoteEnvError, type RemoteEnvOptions } from './remote-env.js';
export {
  REMOTE_PREFIX,
  isRemoteEnvId,
  parseRemoteTag,
  registerRemoteEnv,
  registerRemoteEnvs,
} from './register-remote.js';
export { TOKEN_ENV, clientToken, escapeControl, isLoopback } from './auth.js';
