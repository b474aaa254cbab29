// env: the Env contract, the registry, wrappers, the conformance check and the built-in environments.
export * from './core.js';
export * from './registry.js';
export * from './wrappers.js';
export * from './layered-wrappers.js';
export * from './wrap-env.js';
export { checkEnv, checkRegisteredEnv, EnvCheckError, HOSTILE_ACTIONS, type CheckEnvOptions } from './check-env.js';
import './builtins.js';
