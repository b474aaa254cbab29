// The `agent` block of an agent-program env entry: the documented shape parses with its defaults, bad values and
// unknown keys are one-sentence errors naming the key.
import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { agentProgram, programEnv } from './config.js';

describe('agentProgram', () => {
  it('takes {command, timeoutS} and fills the rest', () => {
    expect(agentProgram({ command: 'node my-agent.mjs', timeoutS: 60 })).toEqual({
      command: 'node my-agent.mjs',
      module: null,
      export: 'default',
      timeoutS: 60,
      failureReward: 0,
      formatPenalty: -0.1,
      concurrency: 4,
      cwd: null,
      maxCalls: 256,
      verifier: null,
      env: {},
      mcp: null,
    });
  });

  it('names a bad value and an unknown key', () => {
    expect(() => agentProgram({ command: '' }, 'env.train.0.agent')).toThrow(/`env\.train\.0\.agent\.command` = ""/);
    expect(() => agentProgram({ command: 'x', timeoutS: -1 })).toThrow(/`agent\.timeoutS` = -1/);
    expect(() => agentProgram({ command: 'x', timeout: 5 })).toThrow(
      /Unknown key `agent\.timeout`\. Did you mean `timeoutS`/,
    );
    expect(() => agentProgram('node a.mjs')).toThrow(ConfigError);
    expect(() => agentProgram({ module: 'a.mjs', verifier: { module: 'v.mjs', exprt: 'f' } })).toThrow(
      /Unknown key `agent\.verifier\.exprt`\. Did you mean `export`/,
    );
  });

  it('takes an in-process module and a verifier, and wants exactly one of command and module', () => {
    expect(agentProgram({ module: './a.mjs', verifier: { module: './v.mjs' } })).toMatchObject({
      command: null,
      module: './a.mjs',
      export: 'default',
      verifier: { module: './v.mjs', export: 'default' },
    });
    expect(() => agentProgram({ timeoutS: 5 })).toThrow(/exactly one of `command`.*neither is set/);
    expect(() => agentProgram({ command: 'node a.mjs', module: './a.mjs' })).toThrow(
      /exactly one of `command` and `module`, both are set/,
    );
    expect(() => agentProgram({ module: './a.mjs', verifier: { module: '' } })).toThrow(
      /`agent\.verifier\.module` = ""/,
    );
  });

  it('gives a command program its `env` and its MCP server as RAGEN_MCP_* variables, and refuses them on a module agent', () => {
    const http = agentProgram({ command: 'node a.mjs', env: { K: 'v' }, mcp: { url: 'http://127.0.0.1:3000/mcp' } });
    expect(programEnv(http)).toEqual({ K: 'v', RAGEN_MCP_URL: 'http://127.0.0.1:3000/mcp', RAGEN_MCP_HEADERS: '{}' });
    const stdio = agentProgram({ command: 'node a.mjs', mcp: { command: 'node', args: ['server.mjs'] } });
    expect(programEnv(stdio)).toEqual({
      RAGEN_MCP_COMMAND: 'node',
      RAGEN_MCP_ARGS: '["server.mjs"]',
      RAGEN_MCP_ENV: '{}',
    });
    expect(programEnv(agentProgram({ command: 'node a.mjs' }))).toEqual({});
    expect(() =>
      agentProgram({ module: './a.mjs', mcp: { url: 'http://127.0.0.1:3000/mcp' } }, 'env.train.0.agent'),
    ).toThrow(/`env\.train\.0\.agent`: `env` and `mcp` set the environment of a `command` program/);
    expect(() => agentProgram({ command: 'x', mcp: { url: 'not a url' } })).toThrow(ConfigError);
  });
});
