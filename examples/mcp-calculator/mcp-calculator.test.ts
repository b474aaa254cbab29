// Runs examples/mcp-calculator so it cannot rot: its server, tasks and verifier solve a task through the MCP env when
// the calls are right, and `ragen train --config examples/mcp-calculator/config.yaml` trains ragen-tiny on it (2
// steps).
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import '../../src/envs/index.js'; // the built-in environments (MCP among them)
import { loadConfig } from '../../src/config/index.js';
import { makeEnv, type StepResult } from '../../src/env/index.js';
import { readMetricsFile } from '../../src/metrics/index.js';
import { runCli } from '../../src/cli/testing.js';
import { agentProgram } from '../../src/agent/index.js';
import type { McpServerConfig } from '../../src/env/index.js';
import { Gateway, resolveAgentProgram, runAgentEpisode } from '../../src/gateway/index.js';
import { localServeTarget } from '../../src/serve/index.js';
import { TINY_MODEL_DIR } from '../../src/serve/testing.js';
import { loadTokenizer, tinyTokenizerDir } from '../../src/tokenizer/index.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-mcp-example-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const CONFIG = 'examples/mcp-calculator/config.yaml';

/** Live processes running this checkout's calculator server (cmdline and working directory), from /proc. */
function calculatorServers(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${name}/status`, 'utf8');
      if (
        cmd.includes('mcp-calculator/server.mjs') &&
        readlinkSync(`/proc/${name}/cwd`) === process.cwd() &&
        !/State:\s+Z/.test(state)
      )
        pids.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

describe('examples/mcp-calculator', () => {
  it('the calculator server, tasks and verifier: calling calculate on the task and answering its result scores 1', async () => {
    const mcp = loadConfig({ config: CONFIG }).env.config['MCP']!;
    const env = makeEnv('MCP', mcp);
    try {
      for (const seed of [0, 5]) {
        const { observation } = await env.reset({ seed });
        expect(observation).toContain('"name": "calculate"');
        expect(observation).not.toContain('write_note'); // allowedTools keeps the block small
        const expression = /Task: Compute (.*)\.$/.exec(observation)![1]!;
        const task = JSON.parse(readFileSync('examples/mcp-calculator/tasks.jsonl', 'utf8').trim().split('\n')[seed]!);
        const r = (await env.step(
          `<tool_call>{"name": "calculate", "arguments": {"expression": ${JSON.stringify(expression)}}}</tool_call>`,
        )) as StepResult;
        expect(r.observation).toBe(`<tool_response>\n${task.target}\n</tool_response>`);
        const bad = (await env.step(
          '<tool_call>{"name": "calculate", "arguments": {"expression": "2 +"}}</tool_call>',
        )) as StepResult;
        expect(bad.info.actionIsValid).toBe(false);
        expect(bad.observation).toMatch(/cannot evaluate "2 \+"/);
        expect(await env.step(String(task.target + 1))).toMatchObject({ reward: 0, terminated: true });
        await env.reset({ seed });
        expect(await env.step(`The result is ${task.target}`)).toMatchObject({ reward: 1, terminated: true });
      }
    } finally {
      await env.close();
    }
    expect(calculatorServers()).toEqual([]);
  });

  it('the notes tools keep notes for one episode (a fresh server session per episode)', async () => {
    const env = makeEnv('MCP', {
      ...loadConfig({ config: CONFIG }).env.config['MCP']!,
      allowedTools: ['write_note', 'read_notes'],
    });
    const tool = (name: string, args: object) =>
      `<tool_call>{"name": "${name}", "arguments": ${JSON.stringify(args)}}</tool_call>`;
    try {
      await env.reset({ seed: 0 });
      expect(((await env.step(tool('write_note', { text: 'carry 1' }))) as StepResult).observation).toContain(
        'saved note 1',
      );
      expect(((await env.step(tool('read_notes', {}))) as StepResult).observation).toBe(
        '<tool_response>\n1. carry 1\n</tool_response>',
      );
      await env.reset({ seed: 0 });
      expect(((await env.step(tool('read_notes', {}))) as StepResult).observation).toContain('no notes');
    } finally {
      await env.close();
    }
  });

  it('`ragen play MCP` plays a scripted episode against the calculator server', async () => {
    const r = await runCli(
      'play',
      'MCP',
      '--seed',
      '0',
      '--json',
      '--config',
      'server={"command": "node", "args": ["examples/mcp-calculator/server.mjs"]}',
      'tasks={"file": "examples/mcp-calculator/tasks.jsonl"}',
      'verifier={"module": "examples/mcp-calculator/verify.mjs"}',
      '--actions',
      '<tool_call>{"name": "calculate", "arguments": {"expression": "24 * 4 - 97"}}</tool_call> || -1',
    );
    expect(r.code, r.err).toBe(0);
    const played = JSON.parse(r.out) as { steps: { observation: string; reward: number; terminated: boolean }[] };
    expect(played.steps.map((s) => [s.observation.split('\n')[1], s.reward, s.terminated])).toEqual([
      ['-1', 0, false],
      ['Reward: 1', 1, true],
    ]);
    expect(calculatorServers()).toEqual([]);
  });

  it('`ragen train --config examples/mcp-calculator/config.yaml` runs two steps of ragen-tiny to the end', async () => {
    const runDir = join(root, 'run');
    const r = await runCli(
      'train',
      '--config',
      CONFIG,
      `logging.runDir=${runDir}`,
      'trainer.steps=2',
      'env.train=[{tag: MCP, groups: 1, groupSize: 2}]',
      'env.val=[{tag: MCP, groups: 1}]',
      'trainer.valEvery=2',
      'trainer.miniBatchSize=2',
      'trainer.microBatchSize=2',
      'agent.maxNewTokens=12',
      'agent.maxTurns=2',
      'trainer.collapse.every=0',
      'trainer.checkpointEvery=0',
      'algo.advEstimator=grpo',
    );
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/step 2\/2/);
    const rows = readMetricsFile(join(runDir, 'metrics.jsonl'));
    expect(rows.map((m) => m.step)).toEqual([0, 1, 2]);
    expect(Number.isFinite(rows[2]!['actor/pg_loss'])).toBe(true);
    expect(rows[2]).toHaveProperty('val/MCP/success');
    expect(calculatorServers()).toEqual([]); // every episode's server stopped when the run closed its envs
  }, 120_000);

  it('the same server from an agent program: agent.mjs reaches it through RAGEN_MCP_*, its tools reach the policy, its reward comes back', async () => {
    const server = loadConfig({ config: CONFIG }).env.config['MCP']!['server'] as McpServerConfig;
    const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
    const gateway = new Gateway({ ...target, maxTokens: 12 });
    await gateway.listen(0);
    try {
      // the `agent` block as a config gives it: the server as `mcp` (RAGEN_MCP_* for the program), extra variables as
      // `env`
      const program = await resolveAgentProgram(
        agentProgram({
          command: 'node examples/mcp-calculator/agent.mjs',
          timeoutS: 60,
          mcp: server,
          env: { AGENT_MAX_TURNS: '1', AGENT_MAX_TOKENS: '12' },
        }),
      );
      const out = await runAgentEpisode(gateway, program, { episodeId: 'mcp-0', seed: 0, group: 0 });
      expect(out.status, out.stderrTail).toBe('ok');
      expect([0, 1]).toContain(out.reward);
      expect(out.log.calls.length).toBe(1);
      const prompt = loadTokenizer(tinyTokenizerDir()).decode(out.log.calls[0]!.promptIds);
      expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "calculate"');
      expect(prompt).toContain('Compute ');
      expect(calculatorServers()).toEqual([]); // the stdio server the program started went with its process group
    } finally {
      await gateway.close();
    }
  }, 120_000);
});
