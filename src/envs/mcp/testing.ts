// Test servers for the MCP env, written with the SDK's McpServer: one tool module shared by a stdio script (a temp
// file run with node) and an in-process streamable HTTP server on port 0; plus a tasks file and a verifier module.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const require = createRequire(import.meta.url);
const url = (id: string) => pathToFileURL(require.resolve(id)).href;

/**
 * The tools: `add(a, b)`, `count()` (a per-connection counter: shows whether state leaks between sessions),
 * `fail()` (an isError result), `stats()` (structured content only), `die()` (the process exits), `hang()` (never
 * answers).
 */
const TOOLS_SOURCE = `import { z } from ${JSON.stringify(url('zod'))};
export function registerTools(server, { exit }) {
  let count = 0;
  server.registerTool('add', { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
  server.registerTool('count', { description: 'Count calls on this connection.' }, async () => ({ content: [{ type: 'text', text: String(++count) }] }));
  server.registerTool('fail', { description: 'Always fails.' }, async () => ({ isError: true, content: [{ type: 'text', text: 'boom: the fail tool always fails' }] }));
  server.registerTool('stats', { description: 'Structured result.' }, async () => ({ content: [], structuredContent: { mean: 2.5, n: 4 } }));
  server.registerTool('die', { description: 'Ends the server.' }, async () => { exit(); return new Promise(() => {}); });
  server.registerTool('hang', { description: 'Never answers.' }, () => new Promise(() => {}));
}
`;

/** A temp directory holding `tools.mjs`, the stdio server `server.mjs`, `tasks.jsonl` and `verify.mjs`. */
export function writeMcpFixtures(): {
  dir: string;
  server: string;
  tasks: string;
  taskModule: string;
  verifier: string;
  tools: string;
} {
  const dir = mkdtempSync(join(tmpdir(), 'ragen-mcp-'));
  const tools = join(dir, 'tools.mjs');
  writeFileSync(tools, TOOLS_SOURCE);
  const server = join(dir, 'server.mjs');
  writeFileSync(
    server,
    `import { McpServer } from ${JSON.stringify(url('@modelcontextprotocol/sdk/server/mcp.js'))};
import { StdioServerTransport } from ${JSON.stringify(url('@modelcontextprotocol/sdk/server/stdio.js'))};
import { registerTools } from './tools.mjs';
const server = new McpServer({ name: 'test-tools', version: '1' });
registerTools(server, { exit: () => { process.stderr.write('dying on request\\n'); process.exit(3); } });
await server.connect(new StdioServerTransport());
`,
  );
  const tasks = join(dir, 'tasks.jsonl');
  writeFileSync(
    tasks,
    ['{"prompt": "What is 2 + 3?", "target": 5}', '{"prompt": "What is 10 + 7?", "target": 17}'].join('\n'),
  );
  const taskModule = join(dir, 'tasks.mjs');
  writeFileSync(
    taskModule,
    'export const task = (seed, mode) => ({ prompt: `What is ${seed} + ${seed}? (${mode})`, target: 2 * seed });\n',
  );
  const verifier = join(dir, 'verify.mjs');
  // reward 1 for the target after at least one add call, 0.5 for the target without one, 0 otherwise
  writeFileSync(
    verifier,
    `export function verify({ task, calls, answer }) {
  if (Number(answer) !== task.target) return { reward: 0, success: false };
  return calls.some((c) => c.name === 'add' && !c.isError) ? { reward: 1, success: true } : { reward: 0.5, success: false };
}
export const retry = ({ answer, task }) => ({ reward: Number(answer) === task.target ? 1 : -0.1, done: Number(answer) === task.target });
export const broken = () => ({ reward: 'high' });
`,
  );
  return { dir, server, tasks, taskModule, verifier, tools };
}

/**
 * A stdio server written with the SDK's low-level `Server`, which lists `tools` exactly as given (raw JSON schemas, so
 * schemas the high-level API would not produce: `$ref` loops, duplicate names). Every call answers `resultChars` "x"s.
 */
export function writeRawToolsServer(dir: string, tools: unknown[], resultChars = 1): string {
  const server = join(dir, `raw-server-${randomUUID()}.mjs`);
  writeFileSync(
    server,
    `import { Server } from ${JSON.stringify(url('@modelcontextprotocol/sdk/server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(url('@modelcontextprotocol/sdk/server/stdio.js'))};
import { CallToolRequestSchema, ListToolsRequestSchema } from ${JSON.stringify(url('@modelcontextprotocol/sdk/types.js'))};
const server = new Server({ name: 'raw-tools', version: '1' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: ${JSON.stringify(tools)} }));
server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: 'text', text: 'x'.repeat(${resultChars}) }] }));
await server.connect(new StdioServerTransport());
`,
  );
  return server;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => resolve(body === '' ? undefined : JSON.parse(body)));
    req.on('error', reject);
  });
}

/** An in-process streamable HTTP MCP server on port 0 with the same tools, one McpServer per session. */
export async function startHttpMcpServer(
  toolsModule: string,
): Promise<{ url: string; sessions: () => number; stop: () => Promise<void> }> {
  const { registerTools } = (await import(pathToFileURL(toolsModule).href)) as {
    registerTools: (s: McpServer, o: { exit: () => void }) => void;
  };
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let http: Server;
  http = createServer(async (req, res) => {
    try {
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? transports.get(id) : undefined;
      if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => void transports.set(sid, t),
        });
        t.onclose = () => void (t.sessionId && transports.delete(t.sessionId));
        const server = new McpServer({ name: 'test-tools-http', version: '1' });
        registerTools(server, { exit: () => http.closeAllConnections() });
        await server.connect(t);
        transport = t;
      }
      if (!transport) {
        res.writeHead(404).end('unknown session');
        return;
      }
      await transport.handleRequest(req, res, body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessions: () => transports.size,
    stop: async () => {
      for (const t of transports.values()) await t.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Whether a process with this id still exists (signal 0 checks without signalling). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
