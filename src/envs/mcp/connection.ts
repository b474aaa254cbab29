// One MCP client session through the official SDK: stdio (a child process per session) or streamable HTTP (an
// HTTP session per connection), with a timeout on every request and the tool result flattened to text.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pyJson } from '../../tokenizer/index.js';
import type { McpServerConfig } from './schema.js';

/** A tool as the server lists it (the fields the env uses). */
export interface McpTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/**
 * A call's outcome: the result's text (`isError` when the tool reported a failure, or the server refused the call
 * with a JSON-RPC error: the episode goes on), or the connection failed (`kind` says how) and the episode must end.
 */
export type CallOutcome =
  | { ok: true; text: string; isError: boolean }
  | { ok: false; kind: 'timeout' | 'server_closed' | 'server_error' | 'result_too_large'; message: string };

/** How the server is named in messages: its command line or its URL. */
export function describeServer(server: McpServerConfig): string {
  return 'url' in server ? server.url : [server.command, ...server.args].join(' ');
}

const STDERR_KEEP = 400;

/**
 * The SDK's pieces this file uses, imported at the first connection: loading them costs every `ragen` command ~0.5 s.
 */
async function loadSdk() {
  const [client, stdio, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
  };
}
type Sdk = Awaited<ReturnType<typeof loadSdk>>;
let sdk: Promise<Sdk> | undefined;

/** A connected MCP session. `connect` starts it; `close` ends it (and its process) and never throws. */
export class McpConnection {
  private closed = false;
  private stderrTail = '';
  /** Set when the transport closed by itself (the process exited, the HTTP session ended). */
  private lostReason: string | undefined;

  private constructor(
    private readonly sdk: Sdk,
    private readonly client: Client,
    private readonly transport: StdioClientTransport | StreamableHTTPClientTransport,
    readonly server: McpServerConfig,
  ) {}

  /** Connect (start the process or open the HTTP session) and initialize within `timeoutMs`; throws the SDK's error. */
  static async connect(server: McpServerConfig, timeoutMs: number): Promise<McpConnection> {
    const m = await (sdk ??= loadSdk());
    const transport =
      'url' in server
        ? new m.StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } })
        : new m.StdioClientTransport({
            command: server.command,
            args: server.args,
            // the SDK's safe defaults (PATH, HOME, ...) plus the configured variables
            env: { ...m.getDefaultEnvironment(), ...server.env },
            ...(server.cwd !== null ? { cwd: server.cwd } : {}),
            stderr: 'pipe', // kept (the last lines) for the reason of a death instead of flooding the trainer's terminal
          });
    const client = new m.Client({ name: 'ragen-ts', version: '1' });
    const conn = new McpConnection(m, client, transport, server);
    if (transport instanceof m.StdioClientTransport) {
      transport.stderr?.on(
        'data',
        (chunk: Buffer) => (conn.stderrTail = (conn.stderrTail + chunk.toString('utf8')).slice(-STDERR_KEEP)),
      );
    }
    client.onerror = (err: Error) => {
      // the stdio transport drops a message past its read buffer and closes; say that, not "the connection closed"
      const big = /ReadBuffer exceeded maximum size of (\d+) bytes/.exec(err.message);
      if (big)
        conn.lostReason ??= `it sent a message larger than the MCP SDK's stdio limit of ${big[1]} bytes (a tool result that big cannot be read); make the tool return less`;
    };
    client.onclose = () => {
      if (!conn.closed) conn.lostReason ??= 'the connection closed';
    };
    try {
      await client.connect(transport, { timeout: timeoutMs });
    } catch (err) {
      await conn.close();
      throw err;
    }
    return conn;
  }

  /** The child process id (stdio), for checks that it is gone after `close`. */
  get pid(): number | null {
    return this.transport instanceof this.sdk.StdioClientTransport ? this.transport.pid : null;
  }

  /** Whether the session is still usable. */
  get alive(): boolean {
    return !this.closed && this.lostReason === undefined;
  }

  /** Every tool the server lists (following pagination). */
  async listTools(timeoutMs: number): Promise<McpTool[]> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
      for (const t of page.tools)
        tools.push({
          name: t.name,
          ...(t.description !== undefined ? { description: t.description } : {}),
          inputSchema: t.inputSchema as Record<string, unknown>,
        });
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /** Call a tool; a timeout or a lost connection is an outcome, not an exception. */
  async callTool(name: string, args: Record<string, unknown>, timeoutMs: number): Promise<CallOutcome> {
    try {
      const result = await this.client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs });
      return { ok: true, text: resultText(result), isError: result.isError === true };
    } catch (err) {
      return this.failure(err);
    }
  }

  private failure(err: unknown): CallOutcome {
    const { McpError, ErrorCode } = this.sdk;
    const stderr = this.stderrTail.trim()
      ? ` Its last stderr: ${JSON.stringify(this.stderrTail.trim().slice(-200))}.`
      : '';
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return {
        ok: false,
        kind: 'timeout',
        message: `the MCP server \`${describeServer(this.server)}\` did not answer within the call timeout (callTimeoutS); make the tool faster or raise callTimeoutS.`,
      };
    }
    if (this.lostReason?.startsWith('it sent a message larger')) {
      return {
        ok: false,
        kind: 'result_too_large',
        message: `the MCP server \`${describeServer(this.server)}\` ended the call: ${this.lostReason}.`,
      };
    }
    if (
      this.lostReason !== undefined ||
      this.closed ||
      (err instanceof McpError && err.code === ErrorCode.ConnectionClosed)
    ) {
      return {
        ok: false,
        kind: 'server_closed',
        message: `the MCP server \`${describeServer(this.server)}\` closed the connection during the call (${(err as Error).message}).${stderr}`,
      };
    }
    // a live server that answered with a JSON-RPC error (unknown tool, invalid params): the call was wrong, not the
    // server
    if (err instanceof McpError) return { ok: true, text: err.message, isError: true };
    return {
      ok: false,
      kind: 'server_error',
      message: `the MCP server \`${describeServer(this.server)}\` could not be reached for the call (${(err as Error).message}).${stderr}`,
    };
  }

  /**
   * End the session: HTTP sessions are terminated on the server, stdio processes are stopped (SIGTERM, then SIGKILL).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.transport instanceof this.sdk.StreamableHTTPClientTransport && this.lostReason === undefined) {
      // best effort: a server that is gone cannot end its session, and that must not fail the env's close
      await this.transport.terminateSession().catch(() => undefined);
    }
    await this.client.close().catch(() => undefined);
  }
}

/**
 * A tool result as the model reads it: its text parts joined by newlines; the structured content as JSON when there
 * is no text; other parts (images, audio, resource links) named, not inlined.
 */
export function resultText(result: Record<string, unknown>): string {
  const parts: string[] = [];
  const content = Array.isArray(result['content']) ? (result['content'] as Record<string, unknown>[]) : [];
  for (const c of content) {
    if (c['type'] === 'text' && typeof c['text'] === 'string') parts.push(c['text']);
    else if (c['type'] === 'resource' && typeof (c['resource'] as { text?: unknown } | undefined)?.text === 'string')
      parts.push((c['resource'] as { text: string }).text);
    else parts.push(`[${String(c['type'])} content not shown]`);
  }
  if (parts.length === 0 && result['structuredContent'] !== undefined) parts.push(pyJson(result['structuredContent']));
  if (parts.length === 0 && 'toolResult' in result) parts.push(pyJson(result['toolResult'])); // the pre-2025 result shape
  return parts.join('\n');
}
