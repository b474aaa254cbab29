// The MCP env against servers written with the SDK: stdio (a temp script run with node) and streamable HTTP (in
// process, port 0): the tools block, results, every invalid-call kind, the verifier, server death and hangs, cleanup.
import '../index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEnv, makeEnv, resolveEnvConfig, type Env, type StepResult } from '../../env/index.js';
import { McpEnv } from './mcp-env.js';
import type { z } from 'zod';
import { mcpSchema } from './schema.js';
import { processExists, startHttpMcpServer, writeMcpFixtures, writeRawToolsServer } from './testing.js';
import { refCycle } from './tool-schemas.js';

const fx = writeMcpFixtures();
const stdio = { command: process.execPath, args: [fx.server] };

function mcpEnv(over: Partial<z.input<typeof mcpSchema>> = {}): McpEnv {
  return new McpEnv(
    mcpSchema.parse({ server: stdio, tasks: { file: fx.tasks }, verifier: { module: fx.verifier }, ...over }),
  );
}
let http: Awaited<ReturnType<typeof startHttpMcpServer>>;
beforeAll(async () => void (http = await startHttpMcpServer(fx.tools)));
afterAll(async () => http.stop());
/** An env on the in-process HTTP server: for tests of the env's own rules, where spawning a process adds only time. */
const httpEnv = (over: Partial<z.input<typeof mcpSchema>> = {}) => mcpEnv({ server: { url: http.url }, ...over });
const call = (name: string, args: unknown) =>
  `<tool_call>{"name": ${JSON.stringify(name)}, "arguments": ${JSON.stringify(args)}}</tool_call>`;

describe('MCP env over stdio', () => {
  let env: McpEnv;
  beforeAll(() => void (env = mcpEnv({ session: 'env' }))); // one process for these tests (spawning node costs ~1 s here)
  afterAll(async () => env.close());

  it('shows the task and the tools in Qwen tool format in the first observation', async () => {
    const { observation, info } = await env.reset({ seed: 1 });
    expect(info.actionIsValid).toBe(true);
    expect(observation).toContain('Task: What is 10 + 7?');
    const tools = /<tools>\n([\s\S]*)\n<\/tools>/
      .exec(observation)![1]!
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(tools.map((t) => t.function.name)).toEqual(['add', 'count', 'fail', 'stats', 'die', 'hang']);
    expect(tools[0]).toMatchObject({
      type: 'function',
      function: {
        description: 'Add two numbers.',
        parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
      },
    });
    expect(observation).toContain(
      '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    );
  });

  it('a correct tool call returns the result as a tool response, and the verifier ends the episode', async () => {
    await env.reset({ seed: 0 });
    const r = (await env.step(`I will add. ${call('add', { a: 2, b: 3 })}`)) as StepResult;
    expect(r.observation).toBe('<tool_response>\n5\n</tool_response>');
    expect(r.info).toMatchObject({ actionIsValid: true, actionIsEffective: true, toolCalls: 1, status: 'result' });
    expect(r.terminated || r.truncated).toBe(false);
    const s = (await env.step('5')) as StepResult;
    expect(s).toMatchObject({ reward: 1, terminated: true, truncated: false });
    expect(s.info.success).toBe(true);
    await expect(Promise.resolve().then(() => env.step('5'))).rejects.toThrow(/reset/);
  });

  it('the verifier sees the calls: the right answer without the tool scores what it says', async () => {
    await env.reset({ seed: 0 });
    const s = (await env.step('5')) as StepResult;
    expect(s).toMatchObject({ reward: 0.5, terminated: true });
    expect(s.info.success).toBe(false);
  });

  it('every invalid call kind is an invalid action whose observation names the problem, and the episode goes on', async () => {
    await env.reset({ seed: 0 });
    const cases: [string, RegExp][] = [
      ['<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>', /not JSON.*<tool_call>/],
      ['<tool_call>{"name": "add"', /never closed/],
      ['<tool_call>{"arguments": {}}</tool_call>', /no "name"/],
      [call('ad', { a: 1, b: 2 }), /no tool `ad`.*Did you mean `add`.*Call one of: add, count/],
      [call('add', { a: 'one', b: 2 }), /Invalid arguments for `add`.*must be number/],
      [call('add', { a: 1 }), /Invalid arguments for `add`.*required property 'b'/],
      [`${call('add', { a: 1, b: 2 })}${call('add', { a: 1, b: 2 })}`, /2 tool calls.*one/],
      ['   ', /empty/],
      [call('fail', {}), /boom: the fail tool always fails[\s\S]*reported an error/],
    ];
    for (const [action, message] of cases) {
      const r = (await env.step(action)) as StepResult;
      expect(r.info.actionIsValid, action).toBe(false);
      expect(r.observation, action).toMatch(message);
      expect(r.terminated || r.truncated, action).toBe(false);
    }
    // only the call that reached the server (fail) counts; the episode still works
    const r = (await env.step(call('add', { a: 2, b: 3 }))) as StepResult;
    expect(r.info).toMatchObject({ actionIsValid: true, toolCalls: 2 });
  });

  it('structured-only results are shown as JSON', async () => {
    await env.reset({ seed: 0 });
    const r = (await env.step(call('stats', {}))) as StepResult;
    expect(r.observation).toBe('<tool_response>\n{"mean": 2.5, "n": 4}\n</tool_response>');
  });

  it('session env keeps one connection (state carries over); session episode starts a fresh one, and close leaves no process', async () => {
    await env.reset({ seed: 0 });
    const pid = env.serverPid;
    const before = Number(/\n(\d+)\n/.exec(((await env.step(call('count', {}))) as StepResult).observation)![1]);
    await env.reset({ seed: 1 });
    expect(env.serverPid).toBe(pid);
    expect(((await env.step(call('count', {}))) as StepResult).observation).toContain(`\n${before + 1}\n`);
    const fresh = mcpEnv();
    const pids: number[] = [];
    try {
      for (const seed of [0, 1]) {
        await fresh.reset({ seed });
        pids.push(fresh.serverPid!);
        await fresh.step(call('count', {}));
        expect(((await fresh.step(call('count', {}))) as StepResult).observation).toContain('\n2\n');
      }
    } finally {
      await fresh.close();
    }
    expect(new Set(pids).size).toBe(2);
    expect(pids.every((p) => p > 0)).toBe(true);
    expect(pids.filter(processExists)).toEqual([]);
  });

  it('the call budget truncates the episode', async () => {
    const small = httpEnv({ maxToolCalls: 1 });
    try {
      await small.reset({ seed: 0 });
      await small.step(call('add', { a: 1, b: 1 }));
      const r = (await small.step(call('add', { a: 1, b: 1 }))) as StepResult;
      expect(r).toMatchObject({ truncated: true, terminated: false, reward: 0 });
      expect(r.info.status).toBe('max_tool_calls');
    } finally {
      await small.close();
    }
  });

  it('a server that dies mid-episode ends the episode with a reason; the next reset starts a new one', async () => {
    const e = mcpEnv();
    try {
      await e.reset({ seed: 0 });
      const pid = e.serverPid!;
      const r = (await e.step(call('die', {}))) as StepResult;
      expect(r).toMatchObject({ truncated: true, reward: 0 });
      expect(r.info.status).toBe('server_closed');
      expect(r.info.reason).toMatch(/closed the connection.*dying on request/);
      expect(processExists(pid)).toBe(false);
      await e.reset({ seed: 0 });
      expect(((await e.step(call('add', { a: 2, b: 2 }))) as StepResult).observation).toContain('4');
    } finally {
      await e.close();
    }
  });

  it('a hanging tool hits the call timeout, ends the episode, and its process is stopped', async () => {
    const e = mcpEnv({ callTimeoutS: 0.3 });
    try {
      await e.reset({ seed: 0 });
      const pid = e.serverPid!;
      const t0 = Date.now();
      const r = (await e.step(call('hang', {}))) as StepResult;
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(r).toMatchObject({ truncated: true, reward: 0 });
      expect(r.info.status).toBe('timeout');
      expect(r.info.reason).toMatch(/did not answer within the call timeout/);
      expect(processExists(pid)).toBe(false);
    } finally {
      await e.close();
    }
  });

  it('a verifier that returns a bad reward is an error naming the value and the fix', async () => {
    const e = httpEnv({ verifier: { module: fx.verifier, export: 'broken' } });
    try {
      await e.reset({ seed: 0 });
      await expect(e.step('5')).rejects.toThrow(
        /returned \{"reward":"high"\}.*finite number.*return a number or \{reward/,
      );
    } finally {
      await e.close();
    }
  });

  it('tasks from a module: task(seed, mode) poses the task and the verifier sees it', async () => {
    const e = httpEnv({ tasks: { module: fx.taskModule } });
    try {
      expect((await e.reset({ seed: 21, mode: 'val' })).observation).toMatch(/Task: What is 21 \+ 21\? \(val\)$/);
      await e.step(call('add', { a: 21, b: 21 }));
      expect(await e.step('42')).toMatchObject({ reward: 1, terminated: true });
    } finally {
      await e.close();
    }
  });

  it('a verifier may keep the episode going (done: false)', async () => {
    const e = httpEnv({ verifier: { module: fx.verifier, export: 'retry' } });
    try {
      await e.reset({ seed: 0 });
      expect(await e.step('4')).toMatchObject({ reward: -0.1, terminated: false });
      expect(await e.step('5')).toMatchObject({ reward: 1, terminated: true });
    } finally {
      await e.close();
    }
  });
});

describe('MCP env over streamable HTTP', () => {
  it('lists tools, calls them and ends the HTTP session on close', async () => {
    const env: Env = makeEnv('MCP', {
      server: { url: http.url },
      tasks: { file: fx.tasks },
      verifier: { module: fx.verifier },
      allowedTools: ['add', 'hang'],
    });
    const { observation } = await env.reset({ seed: 0 });
    expect(observation).toContain('"name": "add"');
    expect(observation).not.toContain('"name": "count"');
    expect(http.sessions()).toBe(1);
    expect(((await env.step(call('add', { a: 20, b: 22 }))) as StepResult).observation).toBe(
      '<tool_response>\n42\n</tool_response>',
    );
    expect(((await env.step(call('count', {}))) as StepResult).observation).toMatch(/no tool `count`/);
    expect(await env.step('5')).toMatchObject({ reward: 1, terminated: true });
    await env.close();
    expect(http.sessions()).toBe(0);
  });

  it('a hanging tool times out and a vanished server ends the episode with a reason', async () => {
    const env = makeEnv('MCP', {
      server: { url: http.url },
      tasks: { file: fx.tasks },
      verifier: { module: fx.verifier },
      callTimeoutS: 0.3,
    });
    try {
      await env.reset({ seed: 0 });
      expect(((await env.step(call('hang', {}))) as StepResult).info.status).toBe('timeout');
      await env.reset({ seed: 0 });
      const r = (await env.step(call('die', {}))) as StepResult;
      expect(r.truncated).toBe(true);
      expect(['server_closed', 'server_error']).toContain(r.info.status);
      expect(r.info.reason).toMatch(/MCP server `http:\/\/127\.0\.0\.1:\d+\/mcp`/);
    } finally {
      await env.close();
    }
  });
});

describe('MCP env conformance', () => {
  it('passes checkEnv over HTTP (determinism across instances, hostile actions, reset-before-step), with a solver from the tasks', async () => {
    const targets = [5, 17]; // the fixture's tasks.jsonl: 2 + 3 and 10 + 7
    const solve = (seed: number) => [
      call('add', { a: seed % 2 ? 10 : 2, b: seed % 2 ? 7 : 3 }),
      String(targets[seed % 2]),
    ];
    const env = httpEnv();
    try {
      await checkEnv(env, { seeds: [0, 1], solve, make: () => httpEnv(), maxSteps: 20 });
    } finally {
      await env.close();
    }
  });
});

describe('MCP env config', () => {
  it('a missing server, a bad tasks file and an unknown allowed tool are errors that say the fix', async () => {
    const unset = makeEnv('MCP', { tasks: { file: fx.tasks }, verifier: { module: fx.verifier } });
    await expect(Promise.resolve().then(() => unset.reset({ seed: 0 }))).rejects.toThrow(
      /needs `env.config.MCP.server`, which is not set; give e.g. \{command/,
    );
    expect(() => resolveEnvConfig('MCP', { server: { url: 'not a url' } })).toThrow(/`server.url` = .*Invalid URL/);
    expect(() => resolveEnvConfig('MCP', { tasks: { fil: 'x.jsonl' } })).toThrow(
      /`tasks` = \{"fil":"x.jsonl"\}: give \{file: "tasks.jsonl"\}/,
    );
    expect(() => resolveEnvConfig('MCP', { server: { command: 'node', arg: ['x'] } })).toThrow(
      /Unrecognized key: "arg"/,
    );
    const noServer = mcpEnv({
      server: { command: process.execPath, args: ['/nonexistent/server.mjs'] },
      connectTimeoutS: 5,
    });
    await expect(noServer.reset({ seed: 0 })).rejects.toThrow(
      /Could not connect to the MCP server `.*\/nonexistent\/server.mjs`.*env\.config\.MCP\.server/,
    );
    await noServer.close();
    const badTool = httpEnv({ allowedTools: ['ad'] });
    await expect(badTool.reset({ seed: 0 })).rejects.toThrow(/`allowedTools` names `ad`.*Did you mean `add`/);
    await badTool.close();
    const noFile = mcpEnv({ tasks: { file: 'nope.jsonl' } });
    await expect(noFile.reset({ seed: 0 })).rejects.toThrow(/tasks file `nope.jsonl` does not exist/);
    await noFile.close();
  });
});

describe('MCP tool lists from hostile or broken servers (issue 34, item 15)', () => {
  const obj = (extra: Record<string, unknown>) => ({ type: 'object', ...extra });
  const rawEnv = (tools: unknown[], resultChars = 1) =>
    mcpEnv({
      server: { command: process.execPath, args: [writeRawToolsServer(fx.dir, tools, resultChars)] },
      connectTimeoutS: 20,
      callTimeoutS: 20,
    });

  it('item 15: finds $ref loops that never reach the data, and allows recursion through properties', () => {
    expect(refCycle(obj({ $ref: '#' }))).toEqual(['#', '#']);
    expect(refCycle(obj({ properties: { a: { $ref: '#/properties/a' } } }))).toEqual([
      '#/properties/a',
      '#/properties/a',
    ]);
    expect(
      refCycle({
        definitions: {
          a: { allOf: [{ $ref: '#/definitions/b' }] },
          b: { anyOf: [{ type: 'null' }, { $ref: '#/definitions/a' }] },
        },
        $ref: '#/definitions/a',
      }),
    ).not.toBeNull();
    const tree = obj({
      definitions: { n: obj({ properties: { kids: { type: 'array', items: { $ref: '#/definitions/n' } } } }) },
      properties: { root: { $ref: '#/definitions/n' } },
    });
    expect(refCycle(tree)).toBeNull();
    expect(refCycle(obj({ properties: { a: { type: 'number' } }, required: ['a'] }))).toBeNull();
  });

  it('item 15: a self-referential $ref schema is refused at reset naming the tool (was an uncaught RangeError)', async () => {
    const env = rawEnv([
      { name: 'ok', inputSchema: obj({}) },
      { name: 'loop', inputSchema: obj({ properties: { a: { $ref: '#/properties/a' } } }) },
    ]);
    await expect(env.reset({ seed: 0 })).rejects.toThrow(
      /cannot be used: the input schema of tool `loop` has a `\$ref` cycle .*#\/properties\/a -> #\/properties\/a/,
    );
    await env.close();
    const root = rawEnv([{ name: 'self', inputSchema: obj({ $ref: '#' }) }]);
    await expect(root.reset({ seed: 0 })).rejects.toThrow(/tool `self` has a `\$ref` cycle/);
    await root.close();
  });

  it('item 15: two tools with the same name are refused at reset', async () => {
    const env = rawEnv([
      { name: 'add', inputSchema: obj({ properties: { a: { type: 'number' } } }) },
      { name: 'add', inputSchema: obj({ properties: { a: { type: 'string' } } }) },
    ]);
    await expect(env.reset({ seed: 0 })).rejects.toThrow(/lists two tools named `add`/);
    await env.close();
  });

  it('item 15: a schema nested past the limit, and one that does not compile, are refused naming the tool', async () => {
    let deep: Record<string, unknown> = { type: 'number' };
    for (let i = 0; i < 80; i++) deep = obj({ properties: { d: deep } });
    const env = rawEnv([{ name: 'deep', inputSchema: deep }]);
    await expect(env.reset({ seed: 0 })).rejects.toThrow(/tool `deep` is nested deeper than 64 levels/);
    await env.close();
    const bad = rawEnv([{ name: 'weird', inputSchema: obj({ properties: { a: { type: 'no-such-type' } } }) }]);
    await expect(bad.reset({ seed: 0 })).rejects.toThrow(/input schema of tool `weird` does not compile/);
    await bad.close();
  });

  it("item 15: a result past the SDK's 10 MiB stdio limit is reported as too large, not as a closed connection", async () => {
    const env = rawEnv([{ name: 'big', inputSchema: obj({}) }], 11 * 1024 * 1024);
    await env.reset({ seed: 0 });
    const r = (await env.step(call('big', {}))) as StepResult;
    expect(r.truncated).toBe(true);
    expect(r.info.status).toBe('result_too_large');
    expect(String(r.info.reason)).toMatch(
      /larger than the MCP SDK's stdio limit of 10485760 bytes.*make the tool return less/,
    );
    await env.close();
  });
});
