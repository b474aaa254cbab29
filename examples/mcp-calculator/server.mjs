// An MCP calculator + notes server written with the official SDK, for examples/mcp-calculator/config.yaml.
// Run by the MCP env over stdio (`node examples/mcp-calculator/server.mjs`), or over HTTP with `--http PORT`.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** The value of `expr` (numbers, + - * /, parentheses, unary minus), or why it has none: a parser, never eval. */
export function evaluate(expr) {
  const tokens = expr.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const fail = (why) => {
    throw new Error(why);
  };
  const atom = () => {
    const t = tokens[i++];
    if (t === '-') return -atom();
    if (t === '(') {
      const v = sum();
      if (tokens[i++] !== ')') fail('missing )');
      return v;
    }
    if (t !== undefined && /^\d/.test(t)) return Number(t);
    return fail(t === undefined ? 'the expression ends too early' : `unexpected ${JSON.stringify(t)}`);
  };
  const product = () => {
    let v = atom();
    while (tokens[i] === '*' || tokens[i] === '/') {
      const op = tokens[i++];
      const r = atom();
      if (op === '/' && r === 0) fail('division by zero');
      v = op === '*' ? v * r : v / r;
    }
    return v;
  };
  const sum = () => {
    let v = product();
    while (tokens[i] === '+' || tokens[i] === '-') v = tokens[i++] === '+' ? v + product() : v - product();
    return v;
  };
  try {
    const v = sum();
    if (i < tokens.length) fail(`unexpected ${JSON.stringify(tokens[i])}`);
    return v;
  } catch (err) {
    return `cannot evaluate ${JSON.stringify(expr)}: ${err.message}`;
  }
}

/**
 * One server per MCP session: the notes belong to the session (one episode with the env's default `session: episode`).
 */
function makeServer() {
  const server = new McpServer({ name: 'ragen-calculator', version: '1.0.0' });
  const text = (t) => ({ content: [{ type: 'text', text: String(t) }] });
  server.registerTool(
    'calculate',
    {
      description: 'Evaluate an arithmetic expression with + - * / and parentheses.',
      inputSchema: { expression: z.string() },
    },
    async ({ expression }) => {
      const value = evaluate(expression);
      return typeof value === 'number' ? text(value) : { isError: true, content: [{ type: 'text', text: value }] };
    },
  );
  const notes = [];
  server.registerTool(
    'write_note',
    { description: 'Save a note.', inputSchema: { text: z.string() } },
    async ({ text: t }) => {
      notes.push(t);
      return text(`saved note ${notes.length}`);
    },
  );
  server.registerTool('read_notes', { description: 'Read all saved notes.' }, async () =>
    text(notes.length ? notes.map((n, i) => `${i + 1}. ${n}`).join('\n') : 'no notes'),
  );
  return server;
}

const httpAt = process.argv.indexOf('--http');
if (process.argv.includes('--no-serve')) {
  // imported for its `evaluate` (tests)
} else if (httpAt < 0) {
  await makeServer().connect(new StdioServerTransport());
} else {
  // streamable HTTP: one transport and one server per session, found by the Mcp-Session-Id header
  const port = Number(process.argv[httpAt + 1] ?? 3000);
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    let body;
    if (req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      body = raw ? JSON.parse(raw) : undefined;
    }
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => sessions.delete(transport.sessionId);
      await makeServer().connect(transport);
    }
    if (!transport) return void res.writeHead(404).end('unknown MCP session');
    await transport.handleRequest(req, res, body);
  });
  http.listen(port, '127.0.0.1', () => console.error(`MCP calculator on http://127.0.0.1:${port}/mcp`));
}
