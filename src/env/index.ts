// env: the Env contract, the registry, wrappers, the conformance check and the built-in environments.
export * from './core.js';
export * from './registry.js';
import './builtins.js';
