// How a config names an MCP server (a command to start, or a streamable HTTP URL), shared by the MCP env
// (src/envs/mcp) and agent programs (src/agent/config.ts); and the server as RAGEN_MCP_* variables, so an agent program
// run by the training gateway reaches the same server the built-in loop uses (examples/mcp-calculator/agent.mjs).
import { z } from 'zod';

/** A server the env starts itself and speaks to over stdin/stdout (one process per connection). */
export const stdioServerSchema = z.strictObject({
  /** The executable, e.g. "node" (run directly, not through a shell). */
  command: z.string().min(1),
  /** Its arguments, e.g. ["examples/mcp-calculator/server.mjs"]. @default [] */
  args: z.array(z.string()).default([]),
  /** Variables added to the SDK's safe default environment (PATH, HOME, ...). @default {} */
  env: z.record(z.string(), z.string()).default({}),
  /** Working directory of the server; null: the trainer's. @default null */
  cwd: z.string().min(1).nullable().default(null),
});

/** A running server reached over MCP's streamable HTTP transport (one session per connection). */
export const httpServerSchema = z.strictObject({
  /** The server's MCP endpoint, e.g. "http://127.0.0.1:3000/mcp". */
  url: z.string().url(),
  /** Headers sent with every request (e.g. an Authorization header). @default {} */
  headers: z.record(z.string(), z.string()).default({}),
});

/** An MCP server: one the env starts (stdio) or one already running (streamable HTTP). */
export type McpServerConfig = z.infer<typeof stdioServerSchema> | z.infer<typeof httpServerSchema>;

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
