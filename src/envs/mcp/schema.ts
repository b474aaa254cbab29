// The MCP environment's configuration (`env.config.MCP`): which server, which tasks, which verifier, and the limits.
// Validated by zod like every env's config; paths are resolved against the working directory of the command.
import { z } from 'zod';
import { httpServerSchema, stdioServerSchema, type McpServerConfig } from '../../env/index.js';

/** A module export the env calls: `{module: "path/to/file.mjs", export: "verify"}`. */
const moduleRefSchema = (defaultExport: string) =>
  z.strictObject({
    /** Path of an ES module (.mjs/.js), relative to the working directory, or a package name. */
    module: z.string().min(1),
    /** The exported function's name. */
    export: z.string().min(1).default(defaultExport),
  });

/** Tasks: a JSON array or JSONL file of task objects (task `seed mod n`), or a module exporting `task(seed, mode)`. */
export const tasksSchema = z.union(
  [
    z.strictObject({
      /**
       * A `.json` file holding an array of tasks, or a `.jsonl` file with one task per line; each task is an object
       * with a `prompt` string.
       */
      file: z.string().min(1),
    }),
    moduleRefSchema('task'),
  ],
  { error: 'give {file: "tasks.jsonl"} (a .json array or .jsonl file) or {module: "tasks.mjs", export: "task"}' },
);

/** Configuration of the `MCP` env. */
export const mcpSchema = z.object({
  /**
   * The MCP server: `{command, args, env, cwd}` (stdio) or `{url, headers}` (streamable HTTP); must be set (reset says
   * so). @default null
   */
  server: z.union([stdioServerSchema, httpServerSchema]).nullable().default(null),
  /**
   * Where each episode's task comes from: `{file}` or `{module, export}` (default export `task`); must be set. @default
   * null
   */
  tasks: tasksSchema.nullable().default(null),
  /**
   * The reward function `{module, export}` (default export `verify`): gets `{task, calls, answer, seed, mode}`, returns
   * `{reward, success?, done?}`; must be set. @default null
   */
  verifier: moduleRefSchema('verify').nullable().default(null),
  /**
   * Tool calls one episode may make (calls that reached the server, errors included); the next one truncates the
   * episode. @default 8
   */
  maxToolCalls: z.number().int().min(1).default(8),
  /** Names of the server's tools the model sees and may call; null: all of them. @default null */
  allowedTools: z.array(z.string().min(1)).nullable().default(null),
  /**
   * `episode`: a fresh connection (a new process or HTTP session) at every reset, so no state leaks between episodes;
   * `env`: one connection per env instance kept across episodes (cheaper, for stateless servers). @default "episode"
   */
  session: z.enum(['episode', 'env']).default('episode'),
  /** Seconds to start the server, initialize and list its tools. @default 30 */
  connectTimeoutS: z.number().positive().default(30),
  /**
   * Seconds one tool call may take; past it the episode ends (`info.reason` says so) and the connection is dropped.
   * @default 30
   */
  callTimeoutS: z.number().positive().default(30),
  /** Characters kept of a tool result in the observation; 0: all. @default 2000 */
  maxResultChars: z.number().int().min(0).default(2000),
  /** The env instruction (system prompt): how to call a tool and how to give the final answer. */
  instruction: z
    .string()
    .default(
      'You solve the task with the tools listed in the first message. To call a tool, answer with one ' +
        '<tool_call>{"name": <tool-name>, "arguments": <args-json-object>}</tool_call>; its result comes back as <tool_response>. ' +
        'When you know the result, answer with it as plain text, without a tool call.',
    ),
});

export type McpConfig = z.infer<typeof mcpSchema>;
/** The config once `server`, `tasks` and `verifier` are known to be set. */
export { httpServerSchema, stdioServerSchema, type McpServerConfig };

export type ReadyMcpConfig = McpConfig & {
  server: McpServerConfig;
  tasks: NonNullable<McpConfig['tasks']>;
  verifier: NonNullable<McpConfig['verifier']>;
};
