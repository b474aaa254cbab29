// sandbox: runs model-written Python under limits (bubblewrap namespaces + rlimits + seccomp); see docs/sandbox.md.
export {
  Sandbox,
  SandboxUnavailableError,
  DEFAULT_LIMITS,
  type Isolation,
  type SandboxLimits,
  type SandboxOptions,
  type SandboxJob,
  type SandboxRun,
  type TestRun,
  type TestStatus,
} from './sandbox.js';
export { bwrapArgs, findExecutable } from './bwrap.js';
