// The MCP environment: an MCP server's tools are the actions, their results the observations, and a verifier the user
// writes gives the reward. Tools are shown and calls read in Qwen2.5's tool format (src/tokenizer/tool-format.ts).
import type { JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { ConfigError, RagenError, ResetNeededError, didYouMean } from '../../util/index.js';
import { readToolCallBlocks, toolResponseText, toolsBlockText } from '../../tokenizer/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type EnvMode,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { McpConnection, describeServer, type McpTool } from './connection.js';
import type { McpConfig, ReadyMcpConfig } from './schema.js';
import { compileToolValidators, toolListProblem } from './tool-schemas.js';
import { taskFor, verify, type McpCallRecord, type McpTask } from './user-code.js';

/** The MCP server could not be started, reached or listed at reset (the episode cannot begin). */
export class McpServerError extends RagenError {}

const CALL_FORMAT = '<tool_call>{"name": <tool-name>, "arguments": {...}}</tool_call>';

/**
 * A tool as Qwen's template lists it (OpenAI's function shape); the schema's `$schema` tag is dropped (no use to a
 * model).
 */
function functionOf(t: McpTool): Record<string, unknown> {
  const { $schema: _drop, ...parameters } = t.inputSchema;
  return {
    type: 'function',
    function: { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters },
  };
}

/**
 * MCP (multi-turn tool use against an MCP server; needs the server).
 *
 * ## Description
 * Each episode poses a task (from `tasks`) to be solved with the tools of an MCP server, reached through the official
 * SDK over stdio or streamable HTTP. The model calls tools until it gives a final answer, which `verifier` scores.
 *
 * ## Action Space
 * Free text. One `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` block is a tool call; text without a
 * `<tool_call>` is the final answer. Invalid (reward 0, state unchanged, the observation names the fix): empty text,
 * several blocks in one action, an unclosed block, bad JSON, an unknown or disallowed tool, arguments that fail the
 * tool's input schema, and a call the tool (or server) answers with an error (that one is recorded and counted).
 *
 * ## Observation
 * At reset: Qwen's tools block (`# Tools ... <tools>...</tools> ...`) listing the allowed tools, then `Task: <prompt>`.
 * After a call: the result as `<tool_response>...</tool_response>` (text parts; structured content as JSON).
 *
 * ## Starting State
 * The task of the seed (`tasks`); with `session: episode` a fresh connection (a new process or HTTP session).
 *
 * ## Rewards
 * 0 per tool call; the verifier's reward for the final answer. 0 when the episode ends otherwise.
 *
 * ## Episode End
 * Terminated when the verifier says `done` (the default). Truncated when the call budget (`maxToolCalls`) is spent, or
 * when the server dies, hangs past `callTimeoutS` or cannot be reached (`info.reason` says which; the connection is
 * dropped).
 *
 * ## Info
 * `success` (the verifier's), `actionIsValid`, `actionIsEffective` (a call that returned a result), `reason`,
 * `status` (`result`, `tool_error`, `invalid_call`, `answer`, `max_tool_calls`, `timeout`, `server_closed`,
 * `result_too_large`,
 * `server_error`), `toolCalls` (calls that reached the server so far).
 *
 * ## Arguments
 * See {@link McpConfig} and docs/agents.md ("MCP tool servers as environments").
 */
export class McpEnv implements Env {
  readonly legend = '';
  readonly actionNames = undefined;
  private conn: McpConnection | undefined;
  private tools: McpTool[] = [];
  private validators = new Map<string, JsonSchemaValidator<unknown>>();
  private task: McpTask | undefined;
  private seed = 0;
  private mode: EnvMode = 'train';
  private calls: McpCallRecord[] = [];
  private lastResponse = '';
  private done = true;

  constructor(readonly config: McpConfig) {}

  get instruction(): string {
    return this.config.instruction;
  }

  /** The server's process id (stdio) while connected, for checks that nothing outlives `close`. */
  get serverPid(): number | null {
    return this.conn?.pid ?? null;
  }

  /** The config with its three required keys checked: a ConfigError naming the first one missing, with an example. */
  private ready(): ReadyMcpConfig {
    const c = this.config;
    const example = {
      server: '{command: node, args: [my-server.mjs]} or {url: "http://127.0.0.1:3000/mcp"}',
      tasks: '{file: tasks.jsonl}',
      verifier: '{module: verify.mjs, export: verify}',
    };
    for (const key of ['server', 'tasks', 'verifier'] as const) {
      if (c[key] === null)
        throw new ConfigError(
          `The MCP env needs \`env.config.MCP.${key}\`, which is not set; give e.g. ${example[key]} (docs/agents.md, "MCP tool servers as environments").`,
        );
    }
    return c as ReadyMcpConfig;
  }

  async reset({ seed, mode = 'train', options }: ResetOptions): Promise<ResetResult> {
    checkResetOptions('MCP', options, []);
    this.task = await taskFor(this.ready().tasks, seed, mode); // before connecting: a bad tasks file fails without starting a server
    if (this.config.session === 'episode' || !this.conn?.alive) await this.connect();
    this.seed = seed;
    this.mode = mode;
    this.calls = [];
    this.lastResponse = '';
    this.done = false;
    const observation = `${toolsBlockText(this.tools.map(functionOf))}\n\nTask: ${this.task.prompt}`;
    return { observation, info: { success: false, actionIsValid: true, actionIsEffective: false, toolCalls: 0 } };
  }

  private async connect(): Promise<void> {
    await this.conn?.close();
    this.conn = undefined;
    const timeoutMs = this.config.connectTimeoutS * 1000;
    const server = this.ready().server;
    const name = describeServer(server);
    let conn: McpConnection;
    let listed: McpTool[];
    try {
      conn = await McpConnection.connect(server, timeoutMs);
    } catch (err) {
      throw new McpServerError(
        `Could not connect to the MCP server \`${name}\`: ${(err as Error).message}. Check \`env.config.MCP.server\` (is the command right, or the server up at that URL?).`,
      );
    }
    try {
      listed = await conn.listTools(timeoutMs);
    } catch (err) {
      await conn.close();
      throw new McpServerError(
        `The MCP server \`${name}\` did not list its tools: ${(err as Error).message}. An MCP env needs a server with tools.`,
      );
    }
    const allowed = this.config.allowedTools;
    if (allowed !== null) {
      const names = listed.map((t) => t.name);
      const missing = allowed.find((a) => !names.includes(a));
      if (missing !== undefined) {
        await conn.close();
        throw new ConfigError(
          `\`allowedTools\` names \`${missing}\`, which the MCP server \`${name}\` does not have.${didYouMean(missing, names)} Its tools: ${names.join(', ')}.`,
        );
      }
      listed = listed.filter((t) => allowed.includes(t.name));
    }
    const problem = toolListProblem(listed);
    if (problem !== null) {
      await conn.close();
      throw new McpServerError(`The MCP server \`${name}\` cannot be used: ${problem}.`);
    }
    if (
      listed.map((t) => t.name).join('\n') !== this.tools.map((t) => t.name).join('\n') ||
      this.validators.size === 0
    ) {
      const { AjvJsonSchemaValidator } = await import('@modelcontextprotocol/sdk/validation/ajv'); // at first use, as connection.ts loads the SDK
      const ajv = new AjvJsonSchemaValidator();
      const validators = compileToolValidators(listed, (schema) => ajv.getValidator(schema as never));
      if (typeof validators === 'string') {
        await conn.close();
        throw new McpServerError(`The MCP server \`${name}\` cannot be used: ${validators}.`);
      }
      this.validators = validators;
    }
    this.conn = conn;
    this.tools = listed;
  }

  async step(action: string): Promise<StepResult> {
    if (this.done || this.task === undefined || this.conn === undefined)
      throw new ResetNeededError('MCP env: call reset() before step() (and after the episode ends).');
    const blocks = readToolCallBlocks(action);
    if (blocks.length === 0) return this.answer(action);
    if (blocks.length > 1)
      return this.invalid(
        `That action holds ${blocks.length} tool calls; give one ${CALL_FORMAT} per action.`,
        'invalid_call',
      );
    const block = blocks[0]!;
    if (!block.ok) return this.invalid(`Invalid tool call: ${block.reason}; write ${CALL_FORMAT}.`, 'invalid_call');
    const names = this.tools.map((t) => t.name);
    if (!names.includes(block.name))
      return this.invalid(
        `There is no tool \`${block.name}\`.${didYouMean(block.name, names)} Call one of: ${names.join(', ')}.`,
        'invalid_call',
      );
    let check: ReturnType<JsonSchemaValidator<unknown>>;
    try {
      check = this.validators.get(block.name)!(block.arguments);
    } catch (err) {
      return this.invalid(
        `The arguments for \`${block.name}\` could not be checked against its schema (${(err as Error).message}); the server's schema for it is broken.`,
        'invalid_call',
      );
    }
    if (!check.valid)
      return this.invalid(
        `Invalid arguments for \`${block.name}\`: ${check.errorMessage}; give arguments that match its parameters.`,
        'invalid_call',
      );
    if (this.calls.length >= this.config.maxToolCalls) {
      this.done = true;
      const reason = `the tool-call budget (maxToolCalls = ${this.config.maxToolCalls}) is spent without a final answer`;
      return {
        observation: `No tool calls are left: ${reason}.`,
        reward: 0,
        terminated: false,
        truncated: true,
        info: this.info({
          success: false,
          actionIsValid: true,
          actionIsEffective: false,
          reason,
          status: 'max_tool_calls',
        }),
      };
    }
    const outcome = await this.conn.callTool(block.name, block.arguments, this.config.callTimeoutS * 1000);
    if (!outcome.ok) {
      // the server died, hung or vanished: end the episode and drop the connection (the next reset makes a new one)
      this.done = true;
      await this.conn.close();
      return {
        observation: `The episode ended: ${outcome.message}`,
        reward: 0,
        terminated: false,
        truncated: true,
        info: this.info({
          success: false,
          actionIsValid: true,
          actionIsEffective: false,
          reason: outcome.message,
          status: outcome.kind,
        }),
      };
    }
    const max = this.config.maxResultChars;
    const text =
      max > 0 && outcome.text.length > max
        ? `${outcome.text.slice(0, max)}... [${outcome.text.length - max} more characters]`
        : outcome.text;
    this.calls.push({ name: block.name, arguments: block.arguments, result: outcome.text, isError: outcome.isError });
    this.lastResponse = toolResponseText(text);
    if (outcome.isError) {
      const fix = `The tool \`${block.name}\` reported an error; change its arguments or call another tool.`;
      return {
        observation: `${this.lastResponse}\n${fix}`,
        reward: 0,
        terminated: false,
        truncated: false,
        info: this.info(invalidInfo(`tool error: ${text.slice(0, 200)}`, { status: 'tool_error' })),
      };
    }
    return {
      observation: this.lastResponse,
      reward: 0,
      terminated: false,
      truncated: false,
      info: this.info({ success: false, actionIsValid: true, actionIsEffective: true, status: 'result' }),
    };
  }

  private async answer(action: string): Promise<StepResult> {
    const answer = action.trim();
    if (answer === '')
      return this.invalid(
        `The answer is empty; call a tool with ${CALL_FORMAT} or give the final answer as text.`,
        'invalid_call',
      );
    const verdict = await verify(this.ready().verifier, {
      task: this.task!,
      calls: this.calls.slice(),
      answer,
      seed: this.seed,
      mode: this.mode,
    });
    const info = this.info({
      success: verdict.success,
      actionIsValid: true,
      actionIsEffective: true,
      status: 'answer',
    });
    if (verdict.done) {
      this.done = true;
      return {
        observation: `Answer: ${answer}\nReward: ${verdict.reward}`,
        reward: verdict.reward,
        terminated: true,
        truncated: false,
        info,
      };
    }
    return {
      observation: `The answer ${JSON.stringify(answer)} is not accepted; keep working on the task.`,
      reward: verdict.reward,
      terminated: false,
      truncated: false,
      info,
    };
  }

  private invalid(reason: string, status: string): StepResult {
    return {
      observation: reason,
      reward: 0,
      terminated: false,
      truncated: false,
      info: this.info(invalidInfo(reason, { status })),
    };
  }

  private info(base: EnvInfo): EnvInfo {
    return { ...base, toolCalls: this.calls.length };
  }

  render(): string {
    if (this.task === undefined) return '';
    const head = `Task: ${this.task.prompt}\nTool calls: ${this.calls.length} of ${this.config.maxToolCalls}`;
    return this.lastResponse ? `${head}\n${this.lastResponse}` : head;
  }

  async close(): Promise<void> {
    this.done = true;
    const conn = this.conn;
    this.conn = undefined;
    await conn?.close();
  }
}
