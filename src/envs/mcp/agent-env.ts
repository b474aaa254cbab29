// The MCP server of an env config as RAGEN_MCP_* variables, so an agent program run by the training gateway reaches
// the same server the built-in loop uses (examples/mcp-calculator/agent.mjs reads them).
import type { McpServerConfig } from './schema.js';

/**
 * `RAGEN_MCP_URL` (+ `RAGEN_MCP_HEADERS`, JSON) for a streamable HTTP server; `RAGEN_MCP_COMMAND`, `RAGEN_MCP_ARGS`
 * (JSON array), `RAGEN_MCP_ENV` (JSON object) and `RAGEN_MCP_CWD` for a stdio server, which the program starts itself
 * (its process group, killed with the program at its budget, takes the server along). Give it as the runner's `env`.
 */
export function mcpAgentEnv(server: McpServerConfig): Record<string, string> {
  if ('url' in server) return { RAGEN_MCP_URL: server.url, RAGEN_MCP_HEADERS: JSON.stringify(server.headers) };
  return {
    RAGEN_MCP_COMMAND: server.command,
    RAGEN_MCP_ARGS: JSON.stringify(server.args),
    RAGEN_MCP_ENV: JSON.stringify(server.env),
    ...(server.cwd !== null ? { RAGEN_MCP_CWD: server.cwd } : {}),
  };
}
