// The `agent` block of an agent-program env entry: the documented shape parses with its defaults, bad values and
// unknown keys are one-sentence errors naming the key.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { agentProgram } from './config.js';

describe('agentProgram', () => {
  it('takes {command, timeoutS} and fills the rest', () => {
    expect(agentProgram({ command: 'node my-agent.mjs', timeoutS: 60 })).toEqual({ command: 'node my-agent.mjs', timeoutS: 60, failureReward: 0, concurrency: 4, cwd: null, maxCalls: 256 });
  });

  it('names a bad value and an unknown key', () => {
    expect(() => agentProgram({ command: '' }, 'env.train.0.agent')).toThrow(/`env\.train\.0\.agent\.command` = ""/);
    expect(() => agentProgram({ command: 'x', timeoutS: -1 })).toThrow(/`agent\.timeoutS` = -1/);
    expect(() => agentProgram({ command: 'x', timeout: 5 })).toThrow(/Unknown key `agent\.timeout`\. Did you mean `timeoutS`/);
    expect(() => agentProgram('node a.mjs')).toThrow(ConfigError);
  });
});
