// MCP: registers the `MCP` id, an environment whose actions are an MCP server's tools (stdio or streamable HTTP).
import { registerEnv } from '../../env/index.js';
import { McpEnv } from './mcp-env.js';
import { mcpSchema, type McpConfig } from './schema.js';

export { McpEnv, McpServerError } from './mcp-env.js';
export { McpConnection, describeServer, resultText, type McpTool, type CallOutcome } from './connection.js';
export {
  mcpSchema,
  stdioServerSchema,
  httpServerSchema,
  tasksSchema,
  type McpConfig,
  type McpServerConfig,
} from './schema.js';
export {
  loadTaskFile,
  taskFor,
  verify,
  McpUserCodeError,
  type McpTask,
  type McpCallRecord,
  type VerifierInput,
  type Verdict,
  type Verifier,
} from './user-code.js';

registerEnv<McpConfig>('MCP', {
  description:
    'MCP: solve a task with the tools of an MCP server (stdio or streamable HTTP); your verifier gives the reward.',
  schema: mcpSchema,
  create: (config) => new McpEnv(config),
  requires: 'an MCP server and a tasks file and verifier (env config server, tasks, verifier)',
  // the env's own budget (maxToolCalls, the answer) ends episodes first; this caps the loop's actions
  maxActionsPerEpisode: 64,
});
