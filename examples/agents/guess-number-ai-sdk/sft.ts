// Warm start of the guess-number example: a short SFT of ragen-tiny on binary-search demonstrations in both formats
// (the AI SDK agent's tool calls as the gateway renders them, and GuessNumber in the built-in loop), then success
// of each through its own path. Qwen's tool tags are first added to ragen-tiny as one token each (tool-tokens.ts),
// as Qwen's tokenizer has them; the calls are in the `compact` format (`<tool_call>guess(n=8)</tool_call>`, 10
// tokens) unless `--tool-format qwen`. `npx tsx examples/agents/guess-number-ai-sdk/sft.ts [--steps 200] [--out dir]`.
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { agentConfig, loadConfig, LocalEngine, type AgentConfig } from '../../../src/index.js';
import { TOOL_FORMATS, type ToolFormatName } from '../../../src/tokenizer/index.js';
import { agentProgram } from '../../../src/agent/index.js';
import { buildDemos } from '../../../src/train/sft-demos.js';
import { runSft } from '../../../src/train/sft.js';
import { localServeTarget } from '../../../src/serve/index.js';
import { Gateway, agentRollout } from '../../../src/gateway/index.js';
import { guessNumberToolSamples } from './demos.js';
import { withAddedTokens } from './tool-tokens.js';

const HERE = import.meta.dirname;

/** Success of the AI SDK agent through a gateway over the model in `dir`: one episode per seed from `seedBase`. */
export async function gatewaySuccess(
  dir: string,
  o: { episodes: number; seedBase: number; temperature: number; concurrency?: number },
): Promise<{ success: number; episodesPerS: number }> {
  const target = await localServeTarget(dir, (d) => d, { name: 'policy' });
  const gateway = new Gateway({ ...target, sampling: { temperature: o.temperature, topP: 1, topK: 0 } });
  await gateway.listen(0);
  try {
    const program = agentProgram({
      command: `node ${JSON.stringify(join(HERE, 'agent.mjs'))}`,
      timeoutS: 60,
      concurrency: o.concurrency ?? 4,
    });
    const t0 = performance.now();
    const { batch } = await agentRollout(gateway, program, {
      tag: 'GuessNumberAgent',
      groups: o.episodes,
      groupSize: 1,
      seedBase: o.seedBase,
      idPrefix: 'eval',
    });
    return {
      success: batch.episodes.filter((e) => e.success).length / o.episodes,
      episodesPerS: o.episodes / ((performance.now() - t0) / 1000),
    };
  } finally {
    await gateway.close();
    target.dispose();
  }
}

/**
 * The agent settings of the built-in demos: the preset's (`preset`: each turn alone, one sequence per turn), or the
 * whole episode as chat in one sequence (`full`), as the gateway's calls are.
 */
export function builtInDemoAgent(presetAgent: Record<string, unknown>, context: string): AgentConfig {
  if (context !== 'preset' && context !== 'full')
    throw new Error(`--builtin-context must be preset or full, got ${JSON.stringify(context)}.`);
  return agentConfig(
    context === 'full' ? { ...presetAgent, contextWindowMode: 'full', maxContextWindow: null } : presetAgent,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      base: { type: 'string', default: 'models/ragen-tiny' },
      out: { type: 'string', default: 'models/guess-number-tiny' },
      episodes: { type: 'string', default: '400' },
      'builtin-episodes': { type: 'string', default: '400' },
      steps: { type: 'string', default: '200' },
      batch: { type: 'string', default: '8' },
      lr: { type: 'string', default: '2e-3' },
      'eval-episodes': { type: 'string', default: '16' },
      'tool-format': { type: 'string', default: 'compact' },
      // `full`: the built-in demos show the whole episode as chat (as the gateway's calls do), for runs with
      // agent.contextWindowMode=full agent.maxContextWindow=null; default: the preset's one-turn window
      'builtin-context': { type: 'string', default: 'preset' },
    },
  });
  const num = (k: keyof typeof values) => {
    const x = Number(values[k]);
    if (!(x > 0)) throw new Error(`--${k} must be a number > 0, got ${JSON.stringify(values[k])}.`);
    return x;
  };
  const t0 = performance.now();
  const tokenizerDir = mkdtempSync(join(tmpdir(), 'gn-tokenizer-'));
  const toolFormat = values['tool-format'] as ToolFormatName;
  if (!TOOL_FORMATS.includes(toolFormat))
    throw new Error(`--tool-format must be one of ${TOOL_FORMATS.join(', ')}, got ${JSON.stringify(toolFormat)}.`);
  const { model, tokenizer, added } = await withAddedTokens(values.base!, tokenizerDir, undefined, toolFormat);
  console.error(
    `added tokens: ${[...added].map(([tag, { id, pieces }]) => `${tag} = ${id} (was ${pieces.length} pieces)`).join(', ')}`,
  );
  const engine = new LocalEngine({
    policy: model,
    tokenizerPath: join(tokenizerDir, 'tokenizer.json'),
    decode: (ids) => tokenizer.decode(ids),
    seed: 0,
  });
  const preset = loadConfig({ config: 'guessnumber-ppo' });
  const agent = builtInDemoAgent(preset.agent, values['builtin-context']!);
  // as many built-in episodes as tool-call ones: each built-in episode is one short sequence per turn, so the
  // built-in format gets ~3.5 sequences for each tool-call one (with 120, the built-in loop started ~20 points below
  // the gateway: docs/benchmarks.md, issue 42)
  const builtIn = await buildDemos(tokenizer, agent, { envs: ['GuessNumber'], episodes: num('builtin-episodes') });
  const tools = guessNumberToolSamples(tokenizer, num('episodes'));
  const samples = [...builtIn.samples, ...tools];
  console.error(
    `demos: ${builtIn.samples.length} built-in sequences, ${tools.length} tool-call sequences (longest ${Math.max(...tools.map((s) => s.length))} tokens)`,
  );
  const result = await runSft(engine, tokenizer, agent, samples, {
    steps: num('steps'),
    batch: num('batch'),
    lr: num('lr'),
    out: values.out!,
    val: {
      envs: ['GuessNumber'],
      groups: num('eval-episodes'),
      seed: 123,
      temperature: preset.generation.val.temperature,
    },
    onStep: (step, s) =>
      step % 25 === 0 && console.error(`step ${step}: loss ${s.loss.toFixed(4)} (${s.seconds.toFixed(2)} s)`),
  });
  engine.dispose();
  rmSync(tokenizerDir, { recursive: true });
  const viaGateway = await gatewaySuccess(values.out!, {
    episodes: num('eval-episodes'),
    seedBase: 123,
    temperature: preset.generation.val.temperature,
  });
  const summary = {
    command: `npx tsx examples/agents/guess-number-ai-sdk/sft.ts ${process.argv.slice(2).join(' ')}`.trim(),
    // what `ragen sft` records too: the envs and agent settings of the demos (sft-models.test.ts checks presets against
    // them)
    envs: ['GuessNumber'],
    envConfig: {},
    agent,
    addedTokens: Object.fromEntries([...added].map(([tag, { id }]) => [tag, id])),
    toolFormat,
    loss: [result.firstLoss, result.finalLoss],
    builtInSuccess: result.valSuccess['GuessNumber'],
    gatewaySuccess: viaGateway.success,
    seconds: (performance.now() - t0) / 1000,
  };
  writeFileSync(join(values.out!, 'sft_args.json'), `${JSON.stringify(summary, null, 2)}\n`);
  console.error(JSON.stringify(summary));
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
