// env: the Env contract, the registry, wrappers and the conformance check. The built-in environments live in
// src/envs and register themselves when src/envs/index.ts is imported.
export * from './core.js';
export * from './registry.js';
export * from './wrappers.js';
export * from './layered-wrappers.js';
export * from './wrap-env.js';
export { blankImage, fillRect, fillDisc, pixelAt, type Rgb } from './image.js';
export { checkEnv, checkRegisteredEnv, EnvCheckError, HOSTILE_ACTIONS, type CheckEnvOptions } from './check-env.js';
export { stdioServerSchema, httpServerSchema, mcpAgentEnv, type McpServerConfig } from './mcp-server.js';
